package io.nearstream.flink.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.NearstreamProducer;
import io.nearstream.client.NearstreamProducerConfig;
import io.nearstream.client.Position;
import io.nearstream.flink.sink.testutils.StreamReader;
import io.nearstream.flink.testutils.MiniClusters;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.ExplainDetail;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The {@code nearstream} table connector through Flink SQL against the real broker: rows written
 * with {@code INSERT INTO} come back from a bounded {@code SELECT} in pull, push and auto mode, for
 * each format users pick (json, csv, avro, raw), with the metadata columns; and what a user sees
 * when a table is declared wrong or a record cannot be decoded.
 */
class NearstreamTableITCase {

    private static final int STREAMLETS = 4;
    private static final int ROWS = 400;
    private static final long TIMESTAMP_MS = 1_700_000_000_000L;

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    @RegisterExtension static final MiniClusterExtension FLINK = MiniClusters.oneTaskManager(4);

    private static TableEnvironment streaming() {
        TableEnvironment env = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
        env.getConfig().set("parallelism.default", "2");
        env.getConfig().set("execution.checkpointing.interval", "500 ms");
        // A failing job must fail the test, not restart forever.
        env.getConfig().set("restart-strategy.type", "none");
        return env;
    }

    private String table(String name, String stream, String columns, String... options) {
        StringBuilder ddl = new StringBuilder("CREATE TABLE " + name + " (" + columns + ") WITH (");
        ddl.append("'connector' = 'nearstream', 'brokers' = '")
                .append(BROKER.address())
                .append("', 'stream' = '")
                .append(stream)
                .append("'");
        for (String o : options) {
            ddl.append(", ").append(o);
        }
        return ddl.append(")").toString();
    }

    /** A structured format: each column travels, metadata columns are written and read. */
    @ParameterizedTest
    @ValueSource(strings = {"json", "csv", "avro"})
    void rowsWrittenWithInsertComeBackInEveryReadModeWithTheirMetadata(String format)
            throws Exception {
        String stream = "table-" + format;
        BROKER.createStream(stream, STREAMLETS);
        TableEnvironment env = streaming();
        env.executeSql(
                table(
                        "t",
                        stream,
                        "id BIGINT, word STRING, amount DOUBLE,"
                                + " event_time TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',"
                                + " streamlet INT METADATA,"
                                + " pos STRING METADATA FROM 'position' VIRTUAL,"
                                + " idx INT METADATA FROM 'index' VIRTUAL",
                        "'format' = '" + format + "'",
                        "'sink.delivery-guarantee' = 'exactly-once'",
                        "'sink.transactional-id-prefix' = 'table-" + format + "'"));
        StringBuilder values = new StringBuilder();
        for (int i = 0; i < ROWS; i++) {
            values.append(i == 0 ? "" : ", ")
                    .append("(CAST(")
                    .append(i)
                    .append(" AS BIGINT), 'word-")
                    .append(i)
                    .append("', ")
                    .append(i)
                    .append(".5)");
        }
        env.executeSql(
                        "INSERT INTO t SELECT id, word, amount, TO_TIMESTAMP_LTZ("
                                + TIMESTAMP_MS
                                + ", 3), CAST(id % "
                                + STREAMLETS
                                + " AS INT) FROM (VALUES "
                                + values
                                + ") AS v(id, word, amount)")
                .await(2, TimeUnit.MINUTES);

        for (String mode : List.of("pull", "push", "auto")) {
            List<Row> rows =
                    collect(
                            env,
                            "SELECT id, word, amount, event_time, streamlet, pos, idx FROM t"
                                    + " /*+ OPTIONS('scan.bounded.mode' = 'latest',"
                                    + " 'scan.read-mode' = '"
                                    + mode
                                    + "') */");
            assertThat(rows).as(mode).hasSize(ROWS);
            Set<Long> ids = new HashSet<>();
            Set<String> places = new HashSet<>();
            for (Row r : rows) {
                long id = (Long) r.getField(0);
                ids.add(id);
                assertThat(r.getField(1)).as(mode).isEqualTo("word-" + id);
                assertThat((Double) r.getField(2)).as(mode).isEqualTo(id + 0.5);
                assertThat(r.getField(3))
                        .as("the chunk's timestamp, " + mode)
                        .isEqualTo(Instant.ofEpochMilli(TIMESTAMP_MS));
                assertThat(r.getField(4))
                        .as("written to streamlet id % 4, " + mode)
                        .isEqualTo((int) (id % STREAMLETS));
                Position.parse((String) r.getField(5));
                assertThat(places.add(r.getField(4) + "/" + r.getField(5) + "/" + r.getField(6)))
                        .as("each record has its own streamlet, position and index")
                        .isTrue();
            }
            assertThat(ids).as(mode).hasSize(ROWS);
        }

        // A projection the format decodes (json) or the connector applies after decoding.
        List<Row> projected =
                collect(
                        env,
                        "SELECT word, id FROM t /*+ OPTIONS('scan.bounded.mode' = 'latest') */");
        assertThat(projected).hasSize(ROWS);
        for (Row r : projected) {
            assertThat(r.getField(0)).isEqualTo("word-" + r.getField(1));
        }
    }

    /**
     * A watermark declared in SQL over an unbounded source of 4 subtasks whose streamlets but one
     * stay empty: with 'scan.watermark.idle-timeout' the idle subtasks stop holding the watermark
     * back, and the 10 s windows of the one busy streamlet fire with their exact counts.
     */
    @Test
    @Timeout(180)
    void sqlWatermarksWithAnIdleTimeoutFireWindowsWhileOtherStreamletsStayEmpty() throws Exception {
        String stream = "table-idle";
        BROKER.createStream(stream, STREAMLETS);
        long start = 1_700_000_000_000L; // a multiple of 10 s
        try (NearstreamProducer producer =
                new NearstreamProducer(
                        NearstreamProducerConfig.builder(BROKER.client(), stream).build())) {
            for (int i = 0; i < 300; i++) { // one event every 100 ms: 30 s of event time
                String json = "{\"id\": " + i + ", \"ms\": " + (start + i * 100L) + "}";
                producer.sendTo(0, json.getBytes(StandardCharsets.UTF_8), (p, e) -> {});
            }
            producer.flush();
        }
        TableEnvironment env = streaming();
        env.executeSql(
                table(
                        "clicks",
                        stream,
                        "id BIGINT, ms BIGINT, event_time AS TO_TIMESTAMP_LTZ(ms, 3),"
                                + " WATERMARK FOR event_time AS event_time - INTERVAL '1' SECOND",
                        "'format' = 'json'",
                        "'scan.parallelism' = '4'",
                        "'scan.watermark.idle-timeout' = '500 ms'"));
        TableResult result =
                env.executeSql(
                        "SELECT window_start, COUNT(*) FROM TABLE("
                                + "TUMBLE(TABLE clicks, DESCRIPTOR(event_time), INTERVAL '10'"
                                + " SECOND)) GROUP BY window_start, window_end");
        List<Long> counts = new ArrayList<>();
        try (CloseableIterator<Row> it = result.collect()) {
            while (counts.size() < 2) { // the third window waits for later events
                counts.add((Long) it.next().getField(1));
            }
        }
        assertThat(counts).containsExactly(100L, 100L);
    }

    @Test
    void rawTablesCarryTheRecordBytesAsTheyAre() throws Exception {
        String stream = "table-raw";
        BROKER.createStream(stream, STREAMLETS);
        TableEnvironment env = streaming();
        env.executeSql(
                table(
                        "lines",
                        stream,
                        "line STRING, streamlet INT METADATA VIRTUAL",
                        "'format' = 'raw'"));
        List<String> written = new ArrayList<>();
        for (int i = 0; i < ROWS; i++) {
            written.add("line " + i + ", with a comma and \"quotes\"");
        }
        String values =
                written.stream()
                        .map(l -> "('" + l.replace("'", "''") + "')")
                        .collect(Collectors.joining(", "));
        env.executeSql("INSERT INTO lines SELECT * FROM (VALUES " + values + ") AS v(line)")
                .await(2, TimeUnit.MINUTES);
        for (String mode : List.of("pull", "push", "auto")) {
            List<Row> rows =
                    collect(
                            env,
                            "SELECT line FROM lines /*+ OPTIONS('scan.bounded.mode' = 'latest',"
                                    + " 'scan.read-mode' = '"
                                    + mode
                                    + "') */");
            assertThat(rows.stream().map(r -> (String) r.getField(0)))
                    .as(mode)
                    .containsExactlyInAnyOrderElementsOf(written);
        }
        // What other clients read: the bytes of the string, nothing around them.
        assertThat(StreamReader.readAll(BROKER.client(), stream))
                .containsExactlyInAnyOrderElementsOf(written);
    }

    /**
     * Records carry no key: 'key.fields' serialized with 'key.format' choose the streamlet, so rows
     * with equal keys land in one streamlet; a table whose value leaves the key out cannot be read.
     */
    @Test
    void keyFieldsChooseTheStreamletAndAnExceptKeyTableIsWriteOnly() throws Exception {
        String stream = "table-keyed";
        BROKER.createStream(stream, STREAMLETS);
        TableEnvironment env = streaming();
        env.executeSql(
                table(
                        "orders",
                        stream,
                        "customer STRING, amount INT, streamlet INT METADATA VIRTUAL",
                        "'value.format' = 'json'",
                        "'key.format' = 'raw'",
                        "'key.fields' = 'customer'"));
        StringBuilder values = new StringBuilder();
        for (int i = 0; i < 200; i++) {
            values.append(i == 0 ? "" : ", ")
                    .append("('c")
                    .append(i % 20)
                    .append("', ")
                    .append(i)
                    .append(")");
        }
        env.executeSql("INSERT INTO orders SELECT * FROM (VALUES " + values + ") AS v(c, a)")
                .await(2, TimeUnit.MINUTES);
        List<Row> rows =
                collect(env, "SELECT * FROM orders /*+ OPTIONS('scan.bounded.mode' = 'latest') */");
        assertThat(rows).hasSize(200);
        Map<String, Set<Integer>> streamletsOfCustomer = new HashMap<>();
        for (Row r : rows) {
            streamletsOfCustomer
                    .computeIfAbsent((String) r.getField(0), c -> new HashSet<>())
                    .add((Integer) r.getField(2));
        }
        assertThat(streamletsOfCustomer).hasSize(20);
        assertThat(streamletsOfCustomer.values()).allSatisfy(s -> assertThat(s).hasSize(1));
        assertThat(streamletsOfCustomer.values().stream().flatMap(Set::stream).distinct().count())
                .as("20 keys spread over more than one streamlet")
                .isGreaterThan(1);

        env.executeSql(
                table(
                        "values_only",
                        stream,
                        "customer STRING, amount INT",
                        "'value.format' = 'json'",
                        "'key.format' = 'raw'",
                        "'key.fields' = 'customer'",
                        "'value.fields-include' = 'EXCEPT_KEY'"));
        assertThatThrownBy(() -> env.executeSql("SELECT * FROM values_only"))
                .satisfies(
                        e ->
                                assertThat(causes(e))
                                        .contains(
                                                "'value.fields-include' = 'EXCEPT_KEY' cannot be read"));
    }

    @Test
    void aRecordTheFormatCannotDecodeFailsTheJobNamingWhereItIsUnlessTheFormatSkipsIt()
            throws Exception {
        String stream = "table-bad-record";
        BROKER.createStream(stream, 1);
        try (NearstreamProducer producer =
                new NearstreamProducer(
                        NearstreamProducerConfig.builder(BROKER.client(), stream).build())) {
            producer.sendTo(0, "{\"id\": 1}".getBytes(StandardCharsets.UTF_8), (p, e) -> {});
            producer.sendTo(0, "not json".getBytes(StandardCharsets.UTF_8), (p, e) -> {});
            producer.sendTo(0, "{\"id\": 3}".getBytes(StandardCharsets.UTF_8), (p, e) -> {});
            producer.flush();
        }
        TableEnvironment env = streaming();
        env.executeSql(
                table(
                        "events",
                        stream,
                        "id BIGINT",
                        "'format' = 'json'",
                        "'scan.bounded.mode' = 'latest'"));
        assertThatThrownBy(() -> collect(env, "SELECT id FROM events"))
                .satisfies(
                        e ->
                                assertThat(causes(e))
                                        .contains("Cannot decode the record of stream '" + stream)
                                        .contains("at streamlet 0, position ")
                                        .contains("index 1 with format 'json'"));

        List<Row> rows =
                collect(
                        env,
                        "SELECT id FROM events /*+ OPTIONS('json.ignore-parse-errors' = 'true') */");
        assertThat(rows.stream().map(r -> (Long) r.getField(0))).containsExactly(1L, 3L);
    }

    @Test
    void aMissingOrUnknownOptionIsExplainedWithTheValidOnes() {
        TableEnvironment env = streaming();
        env.executeSql(
                "CREATE TABLE no_stream (x STRING) WITH ('connector' = 'nearstream',"
                        + " 'brokers' = '"
                        + BROKER.address()
                        + "', 'format' = 'raw')");
        assertThatThrownBy(() -> env.executeSql("SELECT * FROM no_stream"))
                .satisfies(
                        e ->
                                assertThat(causes(e))
                                        .contains("Missing required options are:")
                                        .contains("stream"));

        env.executeSql(
                table(
                        "typo",
                        "s",
                        "x STRING",
                        "'format' = 'raw'",
                        "'scan.startup-mode' = 'earliest'"));
        assertThatThrownBy(() -> env.executeSql("SELECT * FROM typo"))
                .satisfies(
                        e ->
                                assertThat(causes(e))
                                        .contains("Unsupported options found for 'nearstream'")
                                        .contains("scan.startup-mode")
                                        .contains("scan.startup.mode")
                                        .contains("scan.read-mode"));

        env.executeSql(
                table(
                        "bad_positions",
                        "s",
                        "x STRING",
                        "'format' = 'raw'",
                        "'scan.startup.mode' = 'specific-positions'",
                        "'scan.startup.specific-positions' = 'streamlet:0,offset:12'"));
        assertThatThrownBy(() -> env.executeSql("SELECT * FROM bad_positions"))
                .satisfies(
                        e ->
                                assertThat(causes(e))
                                        .contains("Invalid 'scan.startup.specific-positions'")
                                        .contains("streamlet:N,position:G:S:O"));
    }

    @Test
    void projectionIsPushedIntoTheSourceAndScanParallelismIsTheSources() {
        TableEnvironment env = streaming();
        env.executeSql(
                table(
                        "wide",
                        "wide",
                        "a STRING, b STRING, c BIGINT",
                        "'format' = 'json'",
                        "'scan.parallelism' = '3'"));
        String plan = env.explainSql("SELECT c FROM wide", ExplainDetail.JSON_EXECUTION_PLAN);
        assertThat(plan).contains("project=[c]");
        assertThat(plan)
                .containsPattern("\"Source: wide\\[[0-9]+\\]\"[\\s\\S]*?\"parallelism\" : 3");
    }

    static List<Row> collect(TableEnvironment env, String query) throws Exception {
        TableResult result = env.executeSql(query);
        List<Row> rows = new ArrayList<>();
        try (CloseableIterator<Row> it = result.collect()) {
            it.forEachRemaining(rows::add);
        }
        return rows;
    }

    static String causes(Throwable e) {
        StringBuilder all = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            all.append(t).append('\n');
        }
        return all.toString();
    }
}
