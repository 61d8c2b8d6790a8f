package io.nearstream.flinkcluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.testing.NearstreamBrokerExtension;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Flink SQL as users run it: the shaded flink-sql-connector-nearstream jar in lib/ of a session
 * cluster of two TaskManager JVMs (two slots each) set up as a distribution is for SQL, and a
 * script run by Flink's SQL client: a push-mode source table over JSON records, a filter and a
 * projection, {@code INSERT INTO} a CSV table written exactly once. The sink stream must hold
 * exactly the expected rows, and the broker must have seen one push subscribe for the job (one per
 * host, its four source tasks spread over both TaskManagers).
 */
@Timeout(value = 8, unit = TimeUnit.MINUTES)
class SqlClientITCase {

    private static final int RECORDS = 2_000;

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    @RegisterExtension
    static final FlinkSessionCluster FLINK = FlinkSessionCluster.builder().sql(true).build();

    @TempDir static Path tmp;

    @Test
    void theSqlClientRunsAPushQueryIntoAnExactlyOnceTableOnTheSessionCluster() throws Exception {
        BROKER.createStream("sql-events", 4);
        BROKER.createStream("sql-doubled", 2);
        List<String> events = new ArrayList<>();
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < RECORDS; i++) {
            events.add("{\"word\": \"w" + (i % 50) + "\", \"n\": " + i + "}");
            if (i % 2 == 0) {
                expected.add("w" + (i % 50) + "," + (2L * i));
            }
        }
        Streams.produce(BROKER.client(), "sql-events", events);
        Path script = tmp.resolve("doubled.sql");
        Files.writeString(
                script,
                String.join(
                        "\n",
                        "SET 'table.dml-sync' = 'true';",
                        "SET 'execution.checkpointing.interval' = '1 s';",
                        "SET 'parallelism.default' = '4';",
                        "CREATE TABLE events (word STRING, n BIGINT) WITH (",
                        "  'connector' = 'nearstream', 'brokers' = '" + BROKER.address() + "',",
                        "  'stream' = 'sql-events', 'format' = 'json',",
                        "  'scan.read-mode' = 'push', 'scan.bounded.mode' = 'latest');",
                        "CREATE TABLE doubled (word STRING, n2 BIGINT) WITH (",
                        "  'connector' = 'nearstream', 'brokers' = '" + BROKER.address() + "',",
                        "  'stream' = 'sql-doubled', 'format' = 'csv',",
                        "  'sink.delivery-guarantee' = 'exactly-once',",
                        "  'sink.transactional-id-prefix' = 'sql-client-doubled');",
                        "INSERT INTO doubled SELECT word, n * 2 FROM events WHERE MOD(n, 2) = 0;",
                        ""));
        long subscribesBefore = brokerStat("nearstream_push_subscribe_requests_total");

        String output = FLINK.runSql(script, Duration.ofMinutes(4));

        assertThat(output)
                .as("the SQL client's output")
                .contains("Complete execution of the SQL update statement")
                .doesNotContain("[ERROR]");
        try (Streams.Reader reader = new Streams.Reader(BROKER.client(), "sql-doubled")) {
            assertThat(reader.readUntilQuiet(Duration.ofSeconds(2)))
                    .as("the rows the job committed")
                    .containsExactlyInAnyOrderElementsOf(expected);
        }
        assertThat(brokerStat("nearstream_push_subscribe_requests_total") - subscribesBefore)
                .as("push subscribes for one job on one host")
                .isEqualTo(1);
    }

    private static long brokerStat(String name) throws Exception {
        return BROKER.client().stats().get(30, TimeUnit.SECONDS).getOrDefault(name, 0L);
    }
}
