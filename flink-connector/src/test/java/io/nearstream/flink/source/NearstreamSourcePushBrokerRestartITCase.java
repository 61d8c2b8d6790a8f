package io.nearstream.flink.source;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.Durability;
import io.nearstream.client.SlotFormat;
import io.nearstream.client.StreamConfig;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import io.nearstream.flink.source.testutils.Await;
import io.nearstream.flink.source.testutils.NearstreamTestData;
import io.nearstream.flink.source.testutils.PushRegions;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.util.RestartStrategyUtils;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A checkpointed PUSH-mode job reads 100 000 known records of a durable (sync) stream; the broker
 * is killed with SIGKILL in the middle, after a checkpoint completed, and comes back on the same
 * port and data directory only after the job has failed over at least once. The readers find the
 * old region dead, Flink restores from its checkpoint, the new readers subscribe to the restarted
 * broker (a new epoch) from the checkpointed positions, and every record is counted exactly once.
 */
class NearstreamSourcePushBrokerRestartITCase {

    private static final int STREAMLETS = 4;
    private static final int PER_STREAMLET = 25_000;
    private static final int KILL_AFTER = 20_000;
    private static final Duration GENEROUS = Duration.ofSeconds(180);

    /** Pads every record to about 100 bytes, so that the rings hold a small part of the stream. */
    private static final String PADDING = "|" + "x".repeat(90);

    /** Segments in files from the start, so the records written before the job are in them. */
    @RegisterExtension
    static final NearstreamBrokerExtension BROKER =
            new NearstreamBrokerExtension(List.of("--push-segment-files", "always"));

    @RegisterExtension
    static final MiniClusterExtension FLINK =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    /**
     * Both slot formats: with views, the killed broker's segment files (named by slots the readers
     * held) are left in /dev/shm as its region is, and the restarted broker removes both.
     */
    @ParameterizedTest
    @EnumSource(SlotFormat.class)
    void jobResumesExactlyOnceAfterTheBrokerIsKilledAndRestarted(SlotFormat format)
            throws Exception {
        String stream = "push-broker-restart-" + format.configText();
        BROKER.createStream(
                new StreamConfig(stream, STREAMLETS, 256 * 1024, 4, 1, Durability.SYNC, -1, -1));
        for (int s = 0; s < STREAMLETS; s++) {
            List<String> records = new ArrayList<>(PER_STREAMLET);
            for (int i = 0; i < PER_STREAMLET; i++) {
                records.add(s + "-" + i + PADDING);
            }
            // 73 records per chunk: checkpoints fall inside chunks.
            NearstreamTestData.append(BROKER.client(), stream, s, records, 73, 1_000L * s);
        }

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        env.enableCheckpointing(100, CheckpointingMode.EXACTLY_ONCE);
        // Every attempt while the broker is down fails: allow many.
        RestartStrategyUtils.configureFixedDelayRestartStrategy(env, 1_000, 200L);
        KillPointMap.reset();

        NearstreamSource<String> source =
                NearstreamSource.<String>builder()
                        .setBrokers(BROKER.address())
                        .setStream(stream)
                        .setReadMode(ReadMode.PUSH)
                        // Small rings: most of the stream is still in the broker when it dies.
                        .setPushSlots(4, 64 * 1024)
                        .setPushSlotFormat(format)
                        // Readers give up on the dead broker's region after 3 s without heartbeat.
                        .setPushConsumerTimeoutMs(3_000)
                        .setDeserializer(NearstreamRecordDeserializationSchema.utf8())
                        .setBounded(NearstreamStoppingPositions.latest())
                        .build();

        long killedPid = BROKER.pid();
        CompletableFuture<Map<String, Integer>> result = new CompletableFuture<>();
        Thread collector =
                new Thread(
                        () -> {
                            Map<String, Integer> counts = new HashMap<>();
                            try (CloseableIterator<String> it =
                                    env.fromSource(
                                                    source,
                                                    WatermarkStrategy.noWatermarks(),
                                                    "nearstream-push")
                                            .map(new KillPointMap())
                                            .executeAndCollect()) {
                                it.forEachRemaining(v -> counts.merge(v, 1, Integer::sum));
                                result.complete(counts);
                            } catch (Throwable t) {
                                result.completeExceptionally(t);
                            }
                        },
                        "collect-results");
        collector.setDaemon(true);
        collector.start();
        try {
            Await.until(
                    "the job emitted " + KILL_AFTER + " records and completed a checkpoint",
                    GENEROUS,
                    () -> {
                        if (result.isDone()) {
                            result.join(); // rethrows the job's failure
                            throw new AssertionError("the job ended before the broker was killed");
                        }
                        if (KillPointMap.LAST_ATTEMPT.get() > 10) {
                            // Not a lost heartbeat now and then: the job cannot run at all.
                            throw new AssertionError(
                                    "the job keeps failing before the broker was killed");
                        }
                        return KillPointMap.REACHED.getCount() == 0;
                    },
                    () -> "records seen: " + KillPointMap.SEEN.get());
            long attemptsBeforeKill = KillPointMap.LAST_ATTEMPT.get();
            if (format == SlotFormat.BINARY_VIEW) {
                assertThat(PushRegions.segmentFilesOf(killedPid)).isNotEmpty();
            }
            BROKER.stop(); // SIGKILL
            KillPointMap.RESUME.countDown();

            Await.until(
                    "the job failed over while the broker was down",
                    GENEROUS,
                    () -> {
                        if (result.isDone()) {
                            result.join();
                            throw new AssertionError("the job ended without the broker");
                        }
                        return KillPointMap.LAST_ATTEMPT.get() > attemptsBeforeKill;
                    },
                    () -> "records seen: " + KillPointMap.SEEN.get());
            BROKER.restart(); // same port, same data directory, a new epoch

            Map<String, Integer> counts = result.get(GENEROUS.toSeconds(), TimeUnit.SECONDS);

            assertThat(KillPointMap.SEEN.get())
                    .as("records seen before the broker was killed")
                    .isBetween(KILL_AFTER, STREAMLETS * PER_STREAMLET - 1);
            List<String> duplicated =
                    counts.entrySet().stream()
                            .filter(e -> e.getValue() > 1)
                            .map(e -> e.getKey() + " x" + e.getValue())
                            .sorted()
                            .toList();
            assertThat(duplicated).as("records counted more than once").isEmpty();
            List<String> missing = new ArrayList<>();
            for (int s = 0; s < STREAMLETS; s++) {
                for (int i = 0; i < PER_STREAMLET; i++) {
                    if (!counts.containsKey(s + "-" + i)) {
                        missing.add(s + "-" + i);
                    }
                }
            }
            assertThat(missing).as("records never counted").isEmpty();
            assertThat(counts).hasSize(STREAMLETS * PER_STREAMLET);
            long restartedPid = BROKER.pid();
            Await.until(
                    "the restarted broker ended the job's subscription",
                    GENEROUS,
                    () -> PushRegions.of(restartedPid).isEmpty() && openSubscriptions() == 0,
                    () -> "regions: " + PushRegions.of(restartedPid));
            // SIGKILL gave the first broker no chance to unlink its region: the restarted broker
            // removed it when it started.
            assertThat(PushRegions.of(killedPid)).isEmpty();
            assertThat(PushRegions.segmentFilesOf(killedPid)).isEmpty();
        } finally {
            KillPointMap.RESUME.countDown();
            PushRegions.deleteOf(killedPid); // only if the assertion above failed
        }
    }

    private static long openSubscriptions() throws Exception {
        return BROKER.client()
                .stats()
                .get(30, TimeUnit.SECONDS)
                .getOrDefault("nearstream_push_subscriptions", 0L);
    }

    /**
     * Strips the padding and counts; when both {@link #KILL_AFTER} records were seen and a
     * checkpoint completed, it holds its subtask until the test has killed the broker, so that the
     * kill falls in the middle of the stream. It also notes the attempts that open, so the test
     * sees failovers.
     */
    private static final class KillPointMap extends RichMapFunction<String, String>
            implements CheckpointListener {

        static final AtomicInteger SEEN = new AtomicInteger();

        /** The highest attempt number of a subtask that opened. */
        static final AtomicInteger LAST_ATTEMPT = new AtomicInteger();

        private static final AtomicBoolean CHECKPOINT_COMPLETED = new AtomicBoolean();
        static volatile CountDownLatch REACHED = new CountDownLatch(1);
        static volatile CountDownLatch RESUME = new CountDownLatch(1);
        private static volatile boolean killed;

        static void reset() {
            SEEN.set(0);
            LAST_ATTEMPT.set(0);
            CHECKPOINT_COMPLETED.set(false);
            REACHED = new CountDownLatch(1);
            RESUME = new CountDownLatch(1);
            killed = false;
        }

        @Override
        public void open(OpenContext openContext) {
            LAST_ATTEMPT.accumulateAndGet(
                    getRuntimeContext().getTaskInfo().getAttemptNumber(), Math::max);
        }

        @Override
        public String map(String value) throws Exception {
            if (!killed) {
                int seen = SEEN.incrementAndGet();
                if (seen >= KILL_AFTER && CHECKPOINT_COMPLETED.get()) {
                    REACHED.countDown();
                    if (!RESUME.await(GENEROUS.toSeconds(), TimeUnit.SECONDS)) {
                        throw new IllegalStateException("the test never killed the broker");
                    }
                    killed = true;
                } else if (seen % 200 == 0) {
                    Thread.sleep(2); // let checkpoints complete while records flow
                }
            }
            return value.substring(0, value.indexOf('|'));
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            CHECKPOINT_COMPLETED.set(true);
        }
    }
}
