package io.nearstream.flink.source;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.StreamConfig;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import io.nearstream.flink.source.testutils.NearstreamTestData;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Push mode end to end against the real broker: the same bounded job as in pull mode. */
class NearstreamSourcePushITCase {

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
        String name = "push-" + Long.toHexString(ThreadLocalRandom.current().nextLong());
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

    private static List<String> read(String stream, ReadMode mode, int parallelism)
            throws Exception {
        NearstreamSource<String> source =
                NearstreamSource.<String>builder()
                        .setBrokers(BROKER.address())
                        .setStream(stream)
                        .setReadMode(mode)
                        .setPushSlots(4, 64 * 1024)
                        .setDeserializer(NearstreamRecordDeserializationSchema.utf8())
                        .setFetchMaxWaitMs(100)
                        .setBounded(NearstreamStoppingPositions.latest())
                        .build();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(parallelism);
        List<String> out = new ArrayList<>();
        try (CloseableIterator<String> it =
                env.fromSource(source, WatermarkStrategy.noWatermarks(), "nearstream-" + mode)
                        .executeAndCollect()) {
            it.forEachRemaining(out::add);
        }
        return out;
    }

    private static long stat(String name) throws Exception {
        return BROKER.client().stats().get(30, TimeUnit.SECONDS).getOrDefault(name, 0L);
    }

    private static List<String> regions() throws Exception {
        try (Stream<Path> files = Files.list(Path.of("/dev/shm"))) {
            return files.map(p -> p.getFileName().toString())
                    .filter(n -> n.startsWith("nearstream-push"))
                    .toList();
        }
    }

    @Test
    void boundedJobReadsTheSameInPullAndPushMode() throws Exception {
        String stream = newStream(4);
        List<String> expected = new ArrayList<>();
        for (int s = 0; s < 4; s++) {
            List<String> rs = new ArrayList<>();
            for (int i = 0; i < 3_000 + 500 * s; i++) {
                rs.add(s + "-" + i);
            }
            NearstreamTestData.append(BROKER.client(), stream, s, rs, 97, 1_000);
            expected.addAll(rs);
        }
        List<String> before = regions();

        List<String> pulled = read(stream, ReadMode.PULL, 2);
        long pushedBefore = stat("nearstream_push_records_total");
        long subscribesBefore = stat("nearstream_push_subscribe_requests_total");
        List<String> pushed = read(stream, ReadMode.PUSH, 2);

        // The records really came through the rings: the broker pushed at least all of them.
        assertThat(stat("nearstream_push_records_total") - pushedBefore)
                .isGreaterThanOrEqualTo(expected.size());
        // One push subscribe for the job: the two readers of this TaskManager share it, and the
        // readers finishing one after the other only update it.
        assertThat(stat("nearstream_push_subscribe_requests_total") - subscribesBefore)
                .isEqualTo(1);

        assertThat(pulled).containsExactlyInAnyOrderElementsOf(expected);
        assertThat(pushed).hasSize(expected.size()).containsExactlyInAnyOrderElementsOf(pulled);
        for (int s = 0; s < 4; s++) {
            String prefix = s + "-";
            assertThat(pushed.stream().filter(v -> v.startsWith(prefix)).toList())
                    .as("streamlet %s in order", s)
                    .isEqualTo(expected.stream().filter(v -> v.startsWith(prefix)).toList());
        }
        // The job's readers closed their connections: the broker unlinked the region.
        for (int i = 0; i < 50 && !regions().equals(before); i++) {
            Thread.sleep(100);
        }
        assertThat(regions()).isEqualTo(before);
    }

    @Test
    void autoModePushesOnTheBrokersHost() throws Exception {
        String stream = newStream(2);
        List<String> expected = new ArrayList<>();
        for (int s = 0; s < 2; s++) {
            List<String> rs = new ArrayList<>();
            for (int i = 0; i < 1_000; i++) {
                rs.add(s + "-" + i);
            }
            NearstreamTestData.append(BROKER.client(), stream, s, rs, 50, 1_000);
            expected.addAll(rs);
        }
        long pushedBefore = stat("nearstream_push_records_total");
        long subscribesBefore = stat("nearstream_push_subscribe_requests_total");
        // Four readers, two of them without splits: the two with splits share one subscription.
        assertThat(read(stream, ReadMode.AUTO, 4)).containsExactlyInAnyOrderElementsOf(expected);
        assertThat(stat("nearstream_push_subscribe_requests_total") - subscribesBefore)
                .isEqualTo(1);
        // A loopback broker is local to every reader: AUTO pushed.
        assertThat(stat("nearstream_push_records_total") - pushedBefore)
                .isGreaterThanOrEqualTo(expected.size());
    }
}
