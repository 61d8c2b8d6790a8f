package io.nearstream.benchmarks.workloads;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

/** The generator's events, read back with a general JSON parser (Jackson), not our own. */
class YsbEventGeneratorTest {

    private static final Pattern UUID =
            Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
    private static final ObjectMapper JSON = new ObjectMapper();

    private final YsbCampaigns campaigns = YsbCampaigns.generate(7);

    @Test
    void eventsAreTheSevenYsbFieldsAsJsonAndMatchWhatTheGeneratorReports() throws Exception {
        YsbEventGenerator generator = new YsbEventGenerator(campaigns.ads(), 3);
        Map<String, Integer> types = new HashMap<>();
        Set<String> adTypes = Set.of(YsbEventGenerator.AD_TYPES);
        Set<String> users = new HashSet<>();
        Set<String> pages = new HashSet<>();
        for (int i = 0; i < 3_000; i++) {
            // Event times of every length up to now's, and 0; each twice in a row, as producers
            // stamp runs of events with one clock reading (the generator keeps its digits).
            int k = i / 2;
            long time = k == 0 ? 0 : 1_700_000_000_000L / (1L << (k % 40));
            JsonNode event = JSON.readTree(generator.next(time));
            assertThat(event.size()).isEqualTo(7);
            assertThat(event.get("user_id").asText()).matches(UUID);
            assertThat(event.get("page_id").asText()).matches(UUID);
            users.add(event.get("user_id").asText());
            pages.add(event.get("page_id").asText());
            assertThat(event.get("ad_id").asText()).isEqualTo(generator.lastAdId());
            assertThat(campaigns.adToCampaign()).containsKey(generator.lastAdId());
            assertThat(adTypes).contains(event.get("ad_type").asText());
            assertThat(event.get("event_type").asText()).isEqualTo(generator.lastEventType());
            assertThat(generator.lastIsView()).isEqualTo(generator.lastEventType().equals("view"));
            assertThat(event.get("event_time").isTextual()).isTrue(); // a string, as in YSB
            assertThat(event.get("event_time").asText()).isEqualTo(Long.toString(time));
            assertThat(event.get("ip_address").asText()).isEqualTo("1.2.3.4");
            types.merge(generator.lastEventType(), 1, Integer::sum);
        }
        // Three types with equal odds: each near a third of 3000.
        assertThat(types.keySet()).containsExactlyInAnyOrder("view", "click", "purchase");
        assertThat(types.values()).allSatisfy(n -> assertThat(n).isBetween(850, 1150));
        // YSB's real-time generator: users and pages are two pools of 100 ids, picked uniformly
        // (3000 picks miss one of 100 with odds ~1e-11).
        assertThat(users).hasSize(YsbEventGenerator.USERS_AND_PAGES);
        assertThat(pages)
                .hasSize(YsbEventGenerator.USERS_AND_PAGES)
                .doesNotContainAnyElementsOf(users);
    }

    @Test
    void theSameSeedMakesTheSameEventsAndEachEventItsOwnArray() {
        YsbEventGenerator a = new YsbEventGenerator(campaigns.ads(), 11);
        YsbEventGenerator b = new YsbEventGenerator(campaigns.ads(), 11);
        List<byte[]> fromA = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            byte[] event = a.next(1_000L + i);
            assertThat(event).isEqualTo(b.next(1_000L + i));
            fromA.add(event);
        }
        // Earlier events are untouched by later ones (the sinks may still hold them).
        YsbEventGenerator c = new YsbEventGenerator(campaigns.ads(), 11);
        for (int i = 0; i < 100; i++) {
            assertThat(fromA.get(i)).isEqualTo(c.next(1_000L + i));
        }
        assertThat(new YsbEventGenerator(campaigns.ads(), 12).next(1_000L))
                .isNotEqualTo(fromA.get(0));
    }

    @Test
    void refusesWhatItCannotWriteAsYsbJson() {
        assertThatThrownBy(() -> new YsbEventGenerator(List.of(), 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no ads");
        assertThatThrownBy(() -> new YsbEventGenerator(List.of("a\"b"), 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not plain ASCII");
        assertThatThrownBy(() -> new YsbEventGenerator(List.of("caf\u00e9"), 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not plain ASCII");
        YsbEventGenerator generator = new YsbEventGenerator(campaigns.ads(), 1);
        assertThatThrownBy(() -> generator.next(-1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("before the epoch");
        assertThat(
                        new String(
                                generator.next(Long.MAX_VALUE),
                                java.nio.charset.StandardCharsets.US_ASCII))
                .contains("\"event_time\":\"" + Long.MAX_VALUE + "\"");
    }
}
