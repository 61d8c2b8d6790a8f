package io.nearstream.flink.source;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.ChunkBuilder;
import io.nearstream.client.Durability;
import io.nearstream.client.Position;
import io.nearstream.client.StreamConfig;
import io.nearstream.flink.source.metrics.NearstreamSourceReaderMetrics;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import io.nearstream.flink.source.testutils.NearstreamTestData;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Metric;
import org.apache.flink.runtime.testutils.InMemoryReporter;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.ExceptionUtils;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Faults that must reach a Flink job instead of stalling it or thinning its data in silence, end to
 * end against the real broker: a chunk larger than the push slots (read by fetch in its place), and
 * a byte flipped in a sealed middle segment before a restart (DATA_LOSS fails pull and push jobs;
 * {@code skip-damaged-data} steps over it, counted in {@code numDamagedRangesSkipped}).
 */
class NearstreamSourceFaultsITCase {

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    private static final InMemoryReporter METRICS = InMemoryReporter.createWithRetainedMetrics();

    @RegisterExtension
    static final MiniClusterExtension FLINK =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setConfiguration(METRICS.addToConfiguration(new Configuration()))
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    private static String newStream(int segmentBytes, Durability durability) {
        String name = "faults-" + Long.toHexString(ThreadLocalRandom.current().nextLong());
        BROKER.createStream(new StreamConfig(name, 1, segmentBytes, 4, 1, durability, -1, -1));
        return name;
    }

    private record Run(List<String> records, long damagedRangesSkipped) {}

    /** A bounded job of parallelism 1 reading the whole stream; what it emitted and counted. */
    private static Run read(String stream, ReadMode mode, boolean skipDamaged) throws Exception {
        NearstreamSource<String> source =
                NearstreamSource.<String>builder()
                        .setBrokers(BROKER.address())
                        .setStream(stream)
                        .setReadMode(mode)
                        .setPushSlots(4, 64 * 1024)
                        .setSkipDamagedData(skipDamaged)
                        .setDeserializer(NearstreamRecordDeserializationSchema.utf8())
                        .setFetchMaxWaitMs(100)
                        .setBounded(NearstreamStoppingPositions.latest())
                        .build();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        CloseableIterator<String> it =
                env.fromSource(source, WatermarkStrategy.noWatermarks(), "nearstream-" + mode)
                        .collectAsync();
        JobClient job = env.executeAsync();
        List<String> out = new ArrayList<>();
        try (it) {
            it.forEachRemaining(out::add);
        }
        job.getJobExecutionResult().get(60, TimeUnit.SECONDS); // rethrows the job's failure
        long skipped = 0;
        for (Metric m :
                METRICS.findMetrics(
                                job.getJobID(),
                                NearstreamSourceReaderMetrics.DAMAGED_RANGES_SKIPPED)
                        .values()) {
            skipped += ((Counter) m).getCount();
        }
        return new Run(out, skipped);
    }

    private static List<String> records(String prefix, int n, int bytes) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            StringBuilder r = new StringBuilder(prefix + i + "-");
            while (r.length() < bytes) {
                r.append('x');
            }
            out.add(r.toString());
        }
        return out;
    }

    /**
     * A 300 KB chunk between small ones, read through 64 KiB slots: the broker puts a fetch marker
     * in its place and the reader fetches it. Before, the split stopped being pushed and the job
     * never ended.
     */
    @ParameterizedTest
    @EnumSource(
            value = ReadMode.class,
            names = {"PUSH", "AUTO"})
    @Timeout(120)
    void aBoundedPushJobReadsAChunkLargerThanItsSlots(ReadMode mode) throws Exception {
        String stream = newStream(1 << 20, Durability.NONE);
        List<String> expected = new ArrayList<>();
        List<String> before = records("a-", 2_000, 100);
        NearstreamTestData.append(BROKER.client(), stream, 0, before, 100, 1_000);
        expected.addAll(before);
        List<String> big = records("big-", 300, 1_000);
        ChunkBuilder builder = new ChunkBuilder(512 * 1024);
        big.forEach(r -> builder.add(r.getBytes(StandardCharsets.UTF_8)));
        NearstreamTestData.appendChunk(BROKER.client(), stream, 0, builder.build(0, 0, 2_000));
        expected.addAll(big);
        List<String> after = records("b-", 2_000, 100);
        NearstreamTestData.append(BROKER.client(), stream, 0, after, 100, 3_000);
        expected.addAll(after);
        long fetchedBefore = stat("nearstream_push_chunks_by_fetch_total");

        assertThat(read(stream, mode, false).records()).isEqualTo(expected);
        assertThat(stat("nearstream_push_chunks_by_fetch_total") - fetchedBefore).isEqualTo(1);
    }

    @Test
    @Timeout(180)
    void aDamagedMiddleSegmentFailsPullAndPushJobsAndIsSkippedCountedWhenAsked() throws Exception {
        // 4 KiB segments of three ~1.2 KB chunks: 12 chunks over four segments.
        String stream = newStream(4096, Durability.SYNC);
        List<String> all = records("r-", 120, 100);
        List<Position> chunks = NearstreamTestData.append(BROKER.client(), stream, 0, all, 10, 1);
        Position damaged = chunks.get(4);
        assertThat(damaged.segment()).isEqualTo(chunks.get(0).segment() + 1);
        assertThat(chunks.get(11).segment()).isGreaterThan(damaged.segment());

        BROKER.stop();
        flipByte(segmentFile(stream, damaged), damaged.offset() + 300);
        BROKER.restart();

        for (ReadMode mode : List.of(ReadMode.PULL, ReadMode.PUSH)) {
            assertThatThrownBy(() -> read(stream, mode, false))
                    .as(mode + " without skip")
                    .satisfies(
                            e -> {
                                String text = ExceptionUtils.stringifyException(e);
                                assertThat(text)
                                        .contains("DATA_LOSS")
                                        .contains("streamlet 0 of stream '" + stream + "'")
                                        .contains(damaged.toString())
                                        .contains("skip-damaged-data");
                            });
        }
        List<String> expected = new ArrayList<>(all);
        expected.subList(40, 50).clear(); // chunk 4's ten records are lost
        for (ReadMode mode : List.of(ReadMode.PULL, ReadMode.PUSH)) {
            Run run = read(stream, mode, true);
            assertThat(run.records()).as(mode + " with skip").isEqualTo(expected);
            assertThat(run.damagedRangesSkipped()).as(mode + " skipped ranges").isEqualTo(1);
        }
        assertThat(stat("nearstream_damaged_ranges")).isEqualTo(1);
    }

    private static long stat(String name) throws Exception {
        return BROKER.client().stats().get(30, TimeUnit.SECONDS).getOrDefault(name, 0L);
    }

    private static Path segmentFile(String stream, Position at) {
        return BROKER.dataDir()
                .resolve("streams")
                .resolve(stream)
                .resolve("0")
                .resolve(String.format("%020d-%020d.seg", at.group(), at.segment()));
    }

    private static void flipByte(Path file, long offset) throws Exception {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.seek(offset);
            int b = f.read();
            f.seek(offset);
            f.write(b ^ 0x20);
        }
    }
}
