package io.nearstream.flink.source;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.Position;
import io.nearstream.client.StreamConfig;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import io.nearstream.flink.source.testutils.NearstreamTestData;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** End-to-end jobs against the real broker: bounded reads, starting positions, timestamps. */
class NearstreamSourceITCase {

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    @RegisterExtension
    static final MiniClusterExtension FLINK =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(4)
                            .build());

    private static String newStream(int streamlets) {
        String name = "it-" + Long.toHexString(ThreadLocalRandom.current().nextLong());
        // Small segments: readers cross many segments and groups.
        BROKER.createStream(
                new StreamConfig(
                        name,
                        streamlets,
                        16 * 1024,
                        4,
                        1,
                        io.nearstream.client.Durability.NONE,
                        -1,
                        -1));
        return name;
    }

    private static List<String> records(int streamlet, int from, int to) {
        List<String> out = new ArrayList<>();
        for (int i = from; i < to; i++) {
            out.add(streamlet + "-" + i);
        }
        return out;
    }

    private static NearstreamSourceBuilder<String> source(String stream) {
        return NearstreamSource.<String>builder()
                .setBrokers(BROKER.address())
                .setStream(stream)
                .setDeserializer(NearstreamRecordDeserializationSchema.utf8())
                .setFetchMaxWaitMs(100);
    }

    private static List<String> collect(NearstreamSource<String> source, int parallelism)
            throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(parallelism);
        List<String> out = new ArrayList<>();
        try (CloseableIterator<String> it =
                env.fromSource(source, WatermarkStrategy.noWatermarks(), "nearstream")
                        .executeAndCollect()) {
            it.forEachRemaining(out::add);
        }
        return out;
    }

    @Test
    void boundedJobReadsEveryRecordExactlyOnce() throws Exception {
        String stream = newStream(4);
        List<String> expected = new ArrayList<>();
        for (int s = 0; s < 4; s++) {
            List<String> rs = records(s, 0, 5_000 + 1_000 * s);
            NearstreamTestData.append(BROKER.client(), stream, s, rs, 97, 1_000);
            expected.addAll(rs);
        }

        NearstreamSource<String> source =
                source(stream).setBounded(NearstreamStoppingPositions.latest()).build();
        List<String> read = collect(source, 3);

        assertThat(read).hasSize(expected.size()).containsExactlyInAnyOrderElementsOf(expected);
        for (int s = 0; s < 4; s++) {
            String prefix = s + "-";
            assertThat(read.stream().filter(v -> v.startsWith(prefix)).toList())
                    .as("streamlet %s in order", s)
                    .isEqualTo(expected.stream().filter(v -> v.startsWith(prefix)).toList());
        }
    }

    @Test
    void latestTimestampAndSpecificStartingPositions() throws Exception {
        String stream = newStream(2);
        List<Position> chunks = new ArrayList<>();
        for (int c = 0; c < 10; c++) {
            chunks.addAll(
                    NearstreamTestData.append(
                            BROKER.client(),
                            stream,
                            0,
                            records(0, 10 * c, 10 * c + 10),
                            10,
                            1_000L * c));
        }
        NearstreamTestData.append(BROKER.client(), stream, 1, records(1, 0, 10), 10, 500);

        // timestamp(5500): chunks stamped 6000.. of streamlet 0; nothing of streamlet 1.
        assertThat(
                        collect(
                                source(stream)
                                        .setStartingPositions(
                                                NearstreamStartingPositions.timestamp(5_500))
                                        .setBounded(NearstreamStoppingPositions.latest())
                                        .build(),
                                2))
                .containsExactlyInAnyOrderElementsOf(records(0, 60, 100));

        // specific: streamlet 0 from chunk 8, streamlet 1 (not given) from the earliest.
        List<String> expected = new ArrayList<>(records(0, 80, 100));
        expected.addAll(records(1, 0, 10));
        assertThat(
                        collect(
                                source(stream)
                                        .setStartingPositions(
                                                NearstreamStartingPositions.specific(
                                                        Map.of(0, chunks.get(8))))
                                        .setBounded(NearstreamStoppingPositions.latest())
                                        .build(),
                                1))
                .containsExactlyInAnyOrderElementsOf(expected);

        // latest with a bounded stop at the tails: nothing at all.
        assertThat(
                        collect(
                                source(stream)
                                        .setStartingPositions(NearstreamStartingPositions.latest())
                                        .setBounded(NearstreamStoppingPositions.latest())
                                        .build(),
                                2))
                .isEmpty();

        // specific stop: streamlet 0 up to (excluding) chunk 3, streamlet 1 up to its tail.
        List<String> head = new ArrayList<>(records(0, 0, 30));
        head.addAll(records(1, 0, 10));
        assertThat(
                        collect(
                                source(stream)
                                        .setBounded(
                                                NearstreamStoppingPositions.specific(
                                                        Map.of(0, chunks.get(3))))
                                        .build(),
                                2))
                .containsExactlyInAnyOrderElementsOf(head);
    }

    @Test
    void recordsCarryTheirChunkTimestamp() throws Exception {
        String stream = newStream(1);
        NearstreamTestData.append(BROKER.client(), stream, 0, records(0, 0, 5), 5, 1_234);
        NearstreamTestData.append(BROKER.client(), stream, 0, records(0, 5, 10), 5, 5_678);

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        DataStream<String> withTimestamps =
                env.fromSource(
                                source(stream)
                                        .setBounded(NearstreamStoppingPositions.latest())
                                        .build(),
                                WatermarkStrategy.noWatermarks(),
                                "nearstream")
                        .process(
                                new ProcessFunction<String, String>() {
                                    @Override
                                    public void processElement(
                                            String value, Context ctx, Collector<String> out) {
                                        out.collect(value + "@" + ctx.timestamp());
                                    }
                                });
        List<String> read = new ArrayList<>();
        try (CloseableIterator<String> it = withTimestamps.executeAndCollect()) {
            it.forEachRemaining(read::add);
        }

        assertThat(read)
                .containsExactly(
                        "0-0@1234",
                        "0-1@1234",
                        "0-2@1234",
                        "0-3@1234",
                        "0-4@1234",
                        "0-5@5678",
                        "0-6@5678",
                        "0-7@5678",
                        "0-8@5678",
                        "0-9@5678");
    }

    @Test
    void unboundedJobFromLatestReadsOnlyWhatIsAppendedAfterItStarted() throws Exception {
        String stream = newStream(2);
        NearstreamTestData.append(BROKER.client(), stream, 0, records(0, 0, 500), 50, 1);
        NearstreamTestData.append(BROKER.client(), stream, 1, records(1, 0, 30), 50, 1);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        NearstreamSource<String> source =
                source(stream).setStartingPositions(NearstreamStartingPositions.latest()).build();

        List<String> read = new ArrayList<>();
        try (CloseableIterator<String> it =
                env.fromSource(source, WatermarkStrategy.noWatermarks(), "nearstream")
                        .executeAndCollect()) {
            // Wait until both readers long-poll at the tails (the fetch wait is 100 ms, so they
            // are parked most of the time), then append.
            waitForFetchesAtTheTail();
            NearstreamTestData.append(BROKER.client(), stream, 0, records(0, 500, 600), 50, 2);
            NearstreamTestData.append(BROKER.client(), stream, 1, records(1, 30, 40), 50, 2);
            while (read.size() < 110 && it.hasNext()) {
                read.add(it.next());
            }
        }

        List<String> expected = new ArrayList<>(records(0, 500, 600));
        expected.addAll(records(1, 30, 40));
        assertThat(read).containsExactlyInAnyOrderElementsOf(expected);
    }

    /** Waits until both readers' fetches are parked at the tails (long-polling). */
    private static void waitForFetchesAtTheTail() throws Exception {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (System.nanoTime() < deadline) {
            Long waiting = BROKER.client().stats().get().get("nearstream_fetch_waiting");
            if (waiting != null && waiting >= 2) {
                return;
            }
            Thread.sleep(20);
        }
    }

    @Test
    void unboundedJobReadsAStreamCreatedAfterItStarted() throws Exception {
        String stream = "late-" + Long.toHexString(ThreadLocalRandom.current().nextLong());
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        NearstreamSource<String> source =
                source(stream)
                        .setStartingPositions(NearstreamStartingPositions.latest())
                        .setStreamletDiscoveryIntervalMs(200)
                        .build();

        List<String> read = new ArrayList<>();
        try (CloseableIterator<String> it =
                env.fromSource(source, WatermarkStrategy.noWatermarks(), "nearstream")
                        .executeAndCollect()) {
            Thread.sleep(500); // the job runs and finds no stream
            BROKER.createStream(stream, 2);
            // Written before the source discovers the stream: read anyway (earliest for new
            // streams), though the source asked for "latest".
            NearstreamTestData.append(BROKER.client(), stream, 0, records(0, 0, 50), 10, 1);
            NearstreamTestData.append(BROKER.client(), stream, 1, records(1, 0, 50), 10, 1);
            while (read.size() < 100 && it.hasNext()) {
                read.add(it.next());
            }
        }

        List<String> expected = new ArrayList<>(records(0, 0, 50));
        expected.addAll(records(1, 0, 50));
        assertThat(read).containsExactlyInAnyOrderElementsOf(expected);
    }
}
