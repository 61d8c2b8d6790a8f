package io.nearstream.benchmarks.workloads;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * A fixed YSB event set with known times, and what the query must count in it, taken from the
 * generator's own record of each event (its ad and type), not from parsing the JSON: per (campaign,
 * window end) the views and the largest event time, and the views per window end.
 */
public final class YsbReference {

    /** The events, in the order of their times. */
    public final List<byte[]> events = new ArrayList<>();

    /** {@code campaign@windowEnd} -> {views, max event time}. */
    public final Map<String, long[]> expected = new HashMap<>();

    /** Window end -> views in it, as {@link YsbProducer.Result#viewsPerWindow()}. */
    public final SortedMap<Long, Long> viewsPerWindow = new TreeMap<>();

    /** All views. */
    public long views;

    /**
     * The campaigns of {@code seed}, their ad -> campaign table written to {@code table} (what the
     * job is given), and {@code count} events of their ads from the seed after it, the i-th at
     * {@code startMs + i * spacingMs}.
     */
    public static YsbReference withTable(
            Path table, long seed, int count, long startMs, long spacingMs) throws IOException {
        YsbCampaigns campaigns = YsbCampaigns.generate(seed);
        campaigns.write(table);
        return new YsbReference(campaigns, seed + 1, count, startMs, spacingMs);
    }

    /**
     * {@code count} events of {@code campaigns}' ads, the i-th at {@code startMs + i * spacingMs}.
     */
    public YsbReference(
            YsbCampaigns campaigns, long seed, int count, long startMs, long spacingMs) {
        YsbEventGenerator generator = new YsbEventGenerator(campaigns.ads(), seed);
        for (int i = 0; i < count; i++) {
            long t = startMs + i * spacingMs;
            events.add(generator.next(t));
            if (generator.lastEventType().equals("view")) {
                views++;
                String campaign = campaigns.adToCampaign().get(generator.lastAdId());
                long end = YsbPipeline.windowEnd(t);
                viewsPerWindow.merge(end, 1L, Long::sum);
                long[] e = expected.computeIfAbsent(key(campaign, end), k -> new long[2]);
                e[0]++;
                e[1] = Math.max(e[1], t);
            }
        }
    }

    /** The key of {@link #expected}. */
    public static String key(String campaign, long windowEnd) {
        return campaign + "@" + windowEnd;
    }

    /**
     * Checks that {@code windows} hold exactly one result per (campaign, window) of the reference,
     * with its views and largest event time, and nothing else.
     */
    public void assertExactlyOnceEach(List<CampaignWindowCount> windows) {
        Map<String, long[]> actual = new HashMap<>();
        for (CampaignWindowCount w : windows) {
            assertThat(
                            actual.put(
                                    key(w.campaignId, w.windowEnd),
                                    new long[] {w.count, w.maxEventTime}))
                    .as("one result per campaign and window: %s", w)
                    .isNull();
        }
        assertThat(actual.keySet()).isEqualTo(expected.keySet());
        expected.forEach((key, e) -> assertThat(actual.get(key)).as(key).containsExactly(e));
    }
}
