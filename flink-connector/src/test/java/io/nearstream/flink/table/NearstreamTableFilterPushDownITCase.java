package io.nearstream.flink.table;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.NearstreamProducer;
import io.nearstream.client.NearstreamProducerConfig;
import io.nearstream.flink.testutils.MiniClusters;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * WHERE predicates on a JSON table's string column go to the source as a record filter (in push
 * mode, the broker's push thread applies it), and every query still returns exactly the rows
 * Flink's own filter returns, in pull and in push mode, including for records whose member is not a
 * string, is nested, is repeated or holds escapes.
 */
class NearstreamTableFilterPushDownITCase {

    private static final String STREAM = "table-filter";

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    @RegisterExtension static final MiniClusterExtension FLINK = MiniClusters.oneTaskManager(4);

    /** Records of every shape the filter must judge as Flink's JSON format does. */
    private static final String[] SHAPES = {
        "{\"id\": %d, \"event_type\": \"view\"}",
        "{\"id\": %d, \"event_type\": \"click\"}",
        "{\"id\": %d, \"event_type\": \"purchase\"}",
        "{\"id\": %d, \"event_type\": \"vi\\u0065w\"}", // "view", escaped
        // Repeated: Flink's JSON format reads the first, the pushed filter passes either.
        "{\"id\": %d, \"event_type\": \"click\", \"event_type\": \"purchase\"}",
        "{\"id\": %d, \"nested\": {\"event_type\": \"view\"}}", // not top-level: NULL in SQL
        "{\"id\": %d, \"event_type\": 5}", // a number: the string "5" in SQL
        "{\"id\": %d}",
    };

    private static final int ROWS = 800;

    private static TableEnvironment batchOfStreaming() {
        TableEnvironment env = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
        env.getConfig().set("parallelism.default", "2");
        env.getConfig().set("restart-strategy.type", "none");
        return env;
    }

    @Test
    void pushedFiltersReturnExactlyTheRowsOfFlinksFilter() throws Exception {
        BROKER.createStream(STREAM, 4);
        try (NearstreamProducer producer =
                new NearstreamProducer(
                        NearstreamProducerConfig.builder(BROKER.client(), STREAM).build())) {
            for (int i = 0; i < ROWS; i++) {
                String json = String.format(SHAPES[i % SHAPES.length], i);
                producer.sendTo(i % 4, json.getBytes(StandardCharsets.UTF_8), (p, e) -> {});
            }
            producer.flush();
        }
        TableEnvironment env = batchOfStreaming();
        env.executeSql(
                "CREATE TABLE events (id BIGINT, event_type STRING) WITH ('connector' ="
                        + " 'nearstream', 'brokers' = '"
                        + BROKER.address()
                        + "', 'stream' = '"
                        + STREAM
                        + "', 'format' = 'json', 'scan.bounded.mode' = 'latest')");

        // Which shapes each predicate keeps, by Flink's JSON format.
        Map<String, List<Integer>> keeps =
                Map.of(
                        "event_type = 'view'", List.of(0, 3),
                        "event_type IN ('view', 'click')", List.of(0, 1, 3, 4),
                        "event_type = 'view' OR event_type = 'purchase'", List.of(0, 2, 3),
                        "event_type = '5'", List.of(6)); // not pushed: "5" may be a number
        long filteredBefore = filteredByBroker();
        for (Map.Entry<String, List<Integer>> predicate : keeps.entrySet()) {
            boolean pushable = !predicate.getKey().contains("'5'");
            String plan = env.explainSql("SELECT id FROM events WHERE " + predicate.getKey());
            // The scan names the predicates it took: filter=[] when none.
            assertThat(plan.contains("filter=[") && !plan.contains("filter=[]"))
                    .as("pushed down: %s\n%s", predicate.getKey(), plan)
                    .isEqualTo(pushable);
            List<Long> want = new ArrayList<>();
            for (int i = 0; i < ROWS; i++) {
                if (predicate.getValue().contains(i % SHAPES.length)) {
                    want.add((long) i);
                }
            }
            for (String mode : List.of("pull", "push")) {
                List<Long> got = new ArrayList<>();
                try (var it =
                        env.executeSql(
                                        "SELECT id FROM events /*+ OPTIONS('scan.read-mode' = '"
                                                + mode
                                                + "') */ WHERE "
                                                + predicate.getKey())
                                .collect()) {
                    it.forEachRemaining((Row r) -> got.add((Long) r.getField(0)));
                }
                assertThat(got)
                        .as("%s in %s mode", predicate.getKey(), mode)
                        .containsExactlyInAnyOrderElementsOf(want);
            }
        }
        // The push queries' records that failed the filters never left the broker.
        assertThat(filteredByBroker() - filteredBefore).isGreaterThan(0);
    }

    private static long filteredByBroker() throws Exception {
        return BROKER.client()
                .stats()
                .get()
                .getOrDefault("nearstream_push_records_filtered_total", 0L);
    }
}
