package io.nearstream.flink.source;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.ChunkBuilder;
import io.nearstream.client.Durability;
import io.nearstream.client.RecordFilter;
import io.nearstream.client.StreamConfig;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import io.nearstream.flink.source.testutils.NearstreamTestData;
import io.nearstream.flink.testutils.MiniClusters;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A source with a record filter against the real broker: in push mode the broker's push thread
 * drops what fails it, in pull mode the reader; both emit exactly the records the filter passes, in
 * order per streamlet, including chunks none of whose records pass and a chunk too large for a push
 * slot (which the push reader fetches and filters itself).
 */
class NearstreamSourceRecordFilterITCase {

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    @RegisterExtension static final MiniClusterExtension FLINK = MiniClusters.oneTaskManager(4);

    private static final String STREAM = "filtered";
    private static final int STREAMLETS = 4;
    private static final RecordFilter VIEWS = RecordFilter.jsonFieldIn("event_type", "view");
    private static final String[] TYPES = {"view", "click", "purchase"};

    private static String event(int streamlet, int i, String type) {
        return "{\"s\":" + streamlet + ",\"i\":" + i + ",\"event_type\":\"" + type + "\"}";
    }

    private static List<String> read(ReadMode mode) throws Exception {
        NearstreamSource<String> source =
                NearstreamSource.<String>builder()
                        .setBrokers(BROKER.address())
                        .setStream(STREAM)
                        .setReadMode(mode)
                        .setPushSlots(4, 64 * 1024)
                        .setRecordFilter(VIEWS)
                        .setDeserializer(NearstreamRecordDeserializationSchema.utf8())
                        .setFetchMaxWaitMs(100)
                        .setBounded(NearstreamStoppingPositions.latest())
                        .build();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        List<String> out = new ArrayList<>();
        try (CloseableIterator<String> it =
                env.fromSource(source, WatermarkStrategy.noWatermarks(), "filtered-" + mode)
                        .executeAndCollect()) {
            it.forEachRemaining(out::add);
        }
        return out;
    }

    private static long stat(String name) throws Exception {
        return BROKER.client().stats().get(30, TimeUnit.SECONDS).getOrDefault(name, 0L);
    }

    @Test
    void pushAndPullEmitExactlyWhatTheFilterPasses() throws Exception {
        BROKER.createStream(
                new StreamConfig(STREAM, STREAMLETS, 1 << 20, 4, 1, Durability.NONE, -1, -1));
        List<String> all = new ArrayList<>();
        for (int s = 0; s < STREAMLETS; s++) {
            List<String> records = new ArrayList<>();
            for (int i = 0; i < 3_000; i++) {
                // Runs of 150 clicks now and then: chunks without a single view.
                String type = (i / 150) % 4 == 3 ? "click" : TYPES[i % 3];
                records.add(event(s, i, type));
            }
            NearstreamTestData.append(BROKER.client(), STREAM, s, records, 50, 1_000);
            all.addAll(records);
            // One chunk of 120 KiB whose views alone (108 of them) are larger than a 64 KiB slot:
            // the push reader fetches it and filters it itself.
            ChunkBuilder big = new ChunkBuilder();
            String pad = "x".repeat(1000);
            for (int i = 0; i < 120; i++) {
                String r =
                        "{\"s\":"
                                + s
                                + ",\"i\":"
                                + (3_000 + i)
                                + ",\"pad\":\""
                                + pad
                                + "\",\"event_type\":\""
                                + (i % 10 == 0 ? "click" : "view")
                                + "\"}";
                big.add(r.getBytes(StandardCharsets.UTF_8));
                all.add(r);
            }
            NearstreamTestData.appendChunk(BROKER.client(), STREAM, s, big.build(0, 0, 1_000));
        }
        List<String> expected =
                all.stream()
                        .filter(r -> VIEWS.matches(r.getBytes(StandardCharsets.UTF_8)))
                        .toList();
        assertThat(expected.size()).isBetween(all.size() / 5, all.size() / 2);

        long filteredBefore = stat("nearstream_push_records_filtered_total");
        long fetchedBefore = stat("nearstream_push_chunks_by_fetch_total");
        List<String> pushed = read(ReadMode.PUSH);
        List<String> pulled = read(ReadMode.PULL);

        assertThat(pulled).containsExactlyInAnyOrderElementsOf(expected);
        assertThat(pushed).containsExactlyInAnyOrderElementsOf(expected);
        for (int s = 0; s < STREAMLETS; s++) {
            String prefix = "{\"s\":" + s + ",";
            List<String> want = expected.stream().filter(r -> r.startsWith(prefix)).toList();
            assertThat(pushed.stream().filter(r -> r.startsWith(prefix)).toList())
                    .as("streamlet %s in order, push", s)
                    .isEqualTo(want);
            assertThat(pulled.stream().filter(r -> r.startsWith(prefix)).toList())
                    .as("streamlet %s in order, pull", s)
                    .isEqualTo(want);
        }
        // The broker dropped the others before the slots (all but the large chunks' records).
        assertThat(stat("nearstream_push_records_filtered_total") - filteredBefore)
                .isEqualTo(STREAMLETS * 3_000L - (expected.size() - STREAMLETS * 108L));
        assertThat(stat("nearstream_push_chunks_by_fetch_total") - fetchedBefore)
                .isEqualTo(STREAMLETS);
    }
}
