package io.nearstream.flink.source;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.Durability;
import io.nearstream.client.NearstreamProducer;
import io.nearstream.client.NearstreamProducerConfig;
import io.nearstream.client.NearstreamPullConsumer;
import io.nearstream.client.NearstreamRecord;
import io.nearstream.client.StartingPosition;
import io.nearstream.client.StreamConfig;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import io.nearstream.flink.source.testutils.Await;
import io.nearstream.flink.source.testutils.NearstreamTestData;
import io.nearstream.flink.source.testutils.PushConsumerJvm;
import io.nearstream.flink.source.testutils.PushRegions;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kill -9} of a JVM that consumes in push mode: the broker notices the closed control
 * connection, ends the subscription and unlinks its region, so nothing is left in /dev/shm; and it
 * keeps serving producers, pull consumers and a new push job.
 */
class NearstreamSourcePushConsumerKillITCase {

    private static final int STREAMLETS = 4;
    private static final int PRELOADED_PER_STREAMLET = 2_000;
    private static final int PRODUCED_AFTER_KILL = 4_000;
    private static final Duration GENEROUS = Duration.ofSeconds(180);

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    @RegisterExtension
    static final MiniClusterExtension FLINK =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    @TempDir Path childDir;

    private static long stat(String name) throws Exception {
        return BROKER.client().stats().get(30, TimeUnit.SECONDS).getOrDefault(name, 0L);
    }

    @Test
    void killedConsumerJvmLeavesNoRegionAndTheBrokerKeepsServing() throws Exception {
        String stream = "push-kill";
        BROKER.createStream(
                new StreamConfig(stream, STREAMLETS, 64 * 1024, 4, 1, Durability.NONE, -1, -1));
        List<String> expected = new ArrayList<>();
        for (int s = 0; s < STREAMLETS; s++) {
            List<String> records = new ArrayList<>();
            for (int i = 0; i < PRELOADED_PER_STREAMLET; i++) {
                records.add("pre-" + s + "-" + i);
            }
            NearstreamTestData.append(BROKER.client(), stream, s, records, 50, 1_000);
            expected.addAll(records);
        }
        long brokerPid = BROKER.pid();
        assertThat(PushRegions.of(brokerPid)).isEmpty();
        assertThat(stat("nearstream_push_subscriptions")).isZero();

        Path log = childDir.resolve("child.log");
        Path tmp = Files.createDirectories(childDir.resolve("tmp"));
        Process child = PushConsumerJvm.fork(BROKER.address(), stream, 1_000, tmp, log);
        try {
            Await.until(
                    "the child JVM consumed records in push mode",
                    GENEROUS,
                    () -> {
                        if (!child.isAlive()) {
                            throw new AssertionError(
                                    "the child JVM exited with "
                                            + child.exitValue()
                                            + "; its log:\n"
                                            + Files.readString(log));
                        }
                        return PushConsumerJvm.consumed(log);
                    },
                    () -> "child log:\n" + readQuietly(log));
            // The child reads through a region of this broker, still open.
            assertThat(PushRegions.of(brokerPid)).as("regions of the running child").isNotEmpty();
            assertThat(stat("nearstream_push_subscriptions")).isPositive();

            child.destroyForcibly(); // SIGKILL: no close, no PushClose, no unmap
            assertThat(child.waitFor(60, TimeUnit.SECONDS)).as("the child died").isTrue();
        } finally {
            if (child.isAlive()) {
                child.destroyForcibly();
                child.waitFor(60, TimeUnit.SECONDS);
            }
        }

        Await.until(
                "the broker ended the dead JVM's subscription and unlinked its region",
                GENEROUS,
                () ->
                        PushRegions.of(brokerPid).isEmpty()
                                && stat("nearstream_push_subscriptions") == 0,
                () -> {
                    try {
                        return "regions: "
                                + PushRegions.of(brokerPid)
                                + ", open subscriptions: "
                                + stat("nearstream_push_subscriptions")
                                + "\nbroker log:\n"
                                + BROKER.log();
                    } catch (Exception e) {
                        return "(stats failed: " + e + ")";
                    }
                });
        assertThat(BROKER.pid()).as("the same broker process").isEqualTo(brokerPid);

        // The broker still takes appends and serves pull fetches ...
        NearstreamProducerConfig config =
                NearstreamProducerConfig.builder(BROKER.address(), stream)
                        .batchSizeBytes(4 * 1024)
                        .linger(Duration.ofMillis(2))
                        .build();
        try (NearstreamProducer producer = new NearstreamProducer(config)) {
            for (int i = 0; i < PRODUCED_AFTER_KILL; i++) {
                String value = "post-" + i;
                producer.send(value.getBytes(StandardCharsets.UTF_8));
                expected.add(value);
            }
            producer.flush();
        }
        assertThat(pullAll(stream, expected.size()))
                .as("pulled after the kill")
                .containsExactlyInAnyOrderElementsOf(expected);

        // ... and pushes to a new job, which reads every record once.
        assertThat(readInPushMode(stream))
                .as("pushed after the kill")
                .containsExactlyInAnyOrderElementsOf(expected);
        Await.until(
                "the new job's subscription ended",
                GENEROUS,
                () ->
                        PushRegions.of(brokerPid).isEmpty()
                                && stat("nearstream_push_subscriptions") == 0,
                () -> "regions: " + PushRegions.of(brokerPid));
    }

    private static List<String> pullAll(String stream, int count) {
        List<String> out = new ArrayList<>();
        try (NearstreamPullConsumer consumer =
                NearstreamPullConsumer.builder(BROKER.address(), stream)
                        .maxWait(Duration.ofMillis(100))
                        .build()) {
            for (int s = 0; s < STREAMLETS; s++) {
                consumer.assign(s, StartingPosition.earliest());
            }
            long deadline = System.nanoTime() + GENEROUS.toNanos();
            while (out.size() < count && System.nanoTime() < deadline) {
                for (NearstreamRecord r : consumer.poll(Duration.ofMillis(500))) {
                    out.add(new String(r.value(), StandardCharsets.UTF_8));
                }
            }
            // Nothing beyond what was written.
            for (NearstreamRecord r : consumer.poll(Duration.ofMillis(200))) {
                out.add(new String(r.value(), StandardCharsets.UTF_8));
            }
        }
        return out;
    }

    private static List<String> readInPushMode(String stream) throws Exception {
        NearstreamSource<String> source =
                NearstreamSource.<String>builder()
                        .setBrokers(BROKER.address())
                        .setStream(stream)
                        .setReadMode(ReadMode.PUSH)
                        .setPushSlots(4, 64 * 1024)
                        .setDeserializer(NearstreamRecordDeserializationSchema.utf8())
                        .setBounded(NearstreamStoppingPositions.latest())
                        .build();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        List<String> out = new ArrayList<>();
        try (CloseableIterator<String> it =
                env.fromSource(source, WatermarkStrategy.noWatermarks(), "nearstream-push")
                        .executeAndCollect()) {
            it.forEachRemaining(out::add);
        }
        return out;
    }

    private static String readQuietly(Path file) {
        try {
            return Files.exists(file) ? Files.readString(file) : "(no log yet)";
        } catch (Exception e) {
            return "(cannot read " + file + ": " + e + ")";
        }
    }
}
