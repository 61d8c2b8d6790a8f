package io.nearstream.flink.sink;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.Durability;
import io.nearstream.client.StreamConfig;
import io.nearstream.client.TransactionInfo;
import io.nearstream.client.TransactionInfo.State;
import io.nearstream.flink.sink.testutils.SinkJobs;
import io.nearstream.flink.sink.testutils.SourceReads;
import io.nearstream.flink.sink.testutils.StreamReader;
import io.nearstream.flink.source.ReadMode;
import io.nearstream.flink.source.testutils.Await;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.util.RestartStrategyUtils;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The exactly-once sink through infrastructure failures, against the real {@code nearstreamd}:
 *
 * <ul>
 *   <li>a TaskManager is terminated after a checkpoint completed, while both writers are in the
 *       middle of the input; the job fails over onto a new TaskManager and finishes, and the pull
 *       and the push source both read every record exactly once;
 *   <li>the broker of a {@code sync} stream is killed with SIGKILL while the writers hold a
 *       prepared transaction (its checkpoint not yet complete) and an open one with records, and
 *       comes back on the same port and data directory two seconds later; the job finishes, every
 *       record is read exactly once, and no transaction is left open or prepared. With the sink's
 *       default timeouts its retries ride the outage out (no task restarts); with timeouts shorter
 *       than the outage the writers fail, Flink restarts them from the last checkpoint, and the
 *       restored writers and committers take the prepared transactions over.
 * </ul>
 */
class NearstreamSinkFailoverITCase {

    /** Records per job: 200 000 keeps the class well under two minutes here. */
    private static final int RECORDS = 200_000;

    /** A failure is injected once a checkpoint completed and this many records were mapped. */
    private static final int FAIL_AFTER = RECORDS / 4;

    private static final int STREAMLETS = 4;
    private static final int PARALLELISM = 2;
    private static final Duration GENEROUS = Duration.ofSeconds(90);

    /** How long the killed broker stays down before it is started again. */
    private static final long OUTAGE_MS = 2_000;

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    /**
     * Two TaskManagers of one slot each, so that each writer of a job of parallelism 2 runs on its
     * own TaskManager. A test that terminates a TaskManager starts another one.
     */
    @RegisterExtension
    static final MiniClusterExtension FLINK =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(2)
                            .setNumberSlotsPerTaskManager(1)
                            .build());

    /** The MiniCluster's index of the oldest TaskManager still running. */
    private static int oldestTaskManager;

    @Test
    void everyRecordIsReadExactlyOnceInPullAndPushModeAfterATaskManagerIsLost(
            @InjectMiniCluster MiniCluster cluster) throws Exception {
        String stream = "sink-tm-failover";
        String prefix = "tm-failover";
        BROKER.createStream(
                new StreamConfig(stream, STREAMLETS, 256 * 1024, 4, 1, Durability.ASYNC, -1, -1));
        Hold.reset(FAIL_AFTER);
        StreamExecutionEnvironment env = numbersJob(250);
        env.fromSequence(0, RECORDS - 1).map(new HoldingMap()).sinkTo(sink(stream, prefix));
        JobClient job = env.executeAsync("sink-tm-failover");
        try {
            awaitHold(job, "a writer mapped " + FAIL_AFTER + " records after a checkpoint");

            // Each TaskManager runs one writer: losing one fails that writer's region, whose
            // restart needs the slot of a new TaskManager.
            cluster.terminateTaskManager(oldestTaskManager++).get(60, TimeUnit.SECONDS);
            cluster.startTaskManager();
        } finally {
            Hold.RELEASE.countDown();
        }
        job.getJobExecutionResult().get(GENEROUS.toSeconds(), TimeUnit.SECONDS);
        assertThat(Hold.LAST_ATTEMPT.get())
                .as("a writer was restarted after its TaskManager was terminated")
                .isGreaterThan(0);

        assertExactlyOnce(
                "pull source", SourceReads.readAll(BROKER.address(), stream, ReadMode.PULL, 2));
        assertExactlyOnce(
                "push source", SourceReads.readAll(BROKER.address(), stream, ReadMode.PUSH, 2));
        assertThat(BROKER.client().txnList(stream, prefix + "-").join())
                .as("transactions of prefix '%s' left open or prepared", prefix)
                .isEmpty();
    }

    /** How the sink is set up to meet the broker's outage of a second or two. */
    enum Outage {
        /** The defaults (120 s delivery, 30 s request timeout): the sink's retries ride it out. */
        SHORTER_THAN_THE_TIMEOUTS(120_000, 30_000),
        /**
         * 1 s, half the outage: the writers give up and Flink restarts them (not much less: a
         * loaded machine's {@code sync} appends take hundreds of milliseconds).
         */
        LONGER_THAN_THE_TIMEOUTS(1_000, 1_000);

        final long deliveryTimeoutMs;
        final long requestTimeoutMs;

        Outage(long deliveryTimeoutMs, long requestTimeoutMs) {
            this.deliveryTimeoutMs = deliveryTimeoutMs;
            this.requestTimeoutMs = requestTimeoutMs;
        }
    }

    @ParameterizedTest(name = "broker outage {0}")
    @EnumSource(Outage.class)
    void everyRecordIsReadExactlyOnceAfterTheBrokerIsKilledWithPreparedAndOpenTransactions(
            Outage outage) throws Exception {
        String prefix = "broker-kill-" + outage.ordinal();
        String stream = "sink-" + prefix;
        BROKER.createStream(
                new StreamConfig(stream, STREAMLETS, 256 * 1024, 4, 1, Durability.SYNC, -1, -1));
        Hold.reset(FAIL_AFTER);
        StreamExecutionEnvironment env = numbersJob(200);
        env.fromSequence(0, RECORDS - 1)
                .map(new HoldingSnapshotMap())
                .sinkTo(
                        NearstreamSink.<String>builder()
                                .setBrokers(BROKER.address())
                                .setStream(stream)
                                .setRecordSerializer(
                                        NearstreamRecordSerializationSchema.<String>builder()
                                                .setValueSerializationSchema(
                                                        new SimpleStringSchema())
                                                .setKeySerializationSchema(new SimpleStringSchema())
                                                .build())
                                .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                                .setTransactionalIdPrefix(prefix)
                                .setDeliveryTimeoutMs(outage.deliveryTimeoutMs)
                                .setRequestTimeoutMs(outage.requestTimeoutMs)
                                .build());
        JobClient job = env.executeAsync(stream);
        List<TransactionInfo> atKill;
        try {
            awaitHold(job, "writer 0 prepared a transaction after " + FAIL_AFTER + " records");
            // Writer 0's checkpoint cannot complete while its map holds the snapshot: its
            // transaction (and writer 1's) stays prepared, and writer 1 goes on writing into an
            // open one.
            Await.until(
                    "a prepared transaction, and an open one with records",
                    GENEROUS,
                    () -> {
                        List<TransactionInfo> txns = BROKER.client().txnList(stream, "").join();
                        return txns.stream().anyMatch(t -> t.state() == State.PREPARED)
                                && txns.stream()
                                        .anyMatch(t -> t.state() == State.OPEN && t.bytes() > 0);
                    },
                    () -> String.valueOf(BROKER.client().txnList(stream, "").join()));
            atKill = BROKER.client().txnList(stream, "").join();
            BROKER.stop(); // SIGKILL
        } finally {
            // The held checkpoint completes now, and its commits meet a dead broker.
            Hold.RELEASE.countDown();
        }
        // The outage itself, not a wait for a condition: requests fail and are retried meanwhile.
        Thread.sleep(OUTAGE_MS);
        BROKER.restart(); // same port, same data directory

        job.getJobExecutionResult().get(GENEROUS.toSeconds(), TimeUnit.SECONDS);

        String kill = "; transactions at the kill: " + atKill;
        if (outage == Outage.SHORTER_THAN_THE_TIMEOUTS) {
            assertThat(Hold.LAST_ATTEMPT.get())
                    .as("the sink's retries rode the outage out: no task was restarted" + kill)
                    .isZero();
        } else {
            assertThat(Hold.LAST_ATTEMPT.get())
                    .as("the sink gave up on the dead broker and Flink restarted tasks" + kill)
                    .isGreaterThan(0);
        }
        Map<String, Integer> counts =
                SinkJobs.counts(StreamReader.readAll(BROKER.client(), stream));
        assertThat(SinkJobs.duplicated(counts)).as("records read more than once" + kill).isEmpty();
        assertThat(SinkJobs.missing(counts, RECORDS)).as("records never read" + kill).isEmpty();
        assertThat(counts).as("nothing else was written").hasSize(RECORDS);
        assertThat(BROKER.client().txnList(stream, "").join())
                .as("transactions left open or prepared after the job finished" + kill)
                .isEmpty();
    }

    private static NearstreamSink<String> sink(String stream, String prefix) {
        return SinkJobs.sink(BROKER.address(), stream, DeliveryGuarantee.EXACTLY_ONCE, prefix);
    }

    /** Parallelism 2, exactly-once checkpoints every {@code intervalMs}, restarts allowed. */
    private static StreamExecutionEnvironment numbersJob(long intervalMs) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(PARALLELISM);
        env.enableCheckpointing(intervalMs, CheckpointingMode.EXACTLY_ONCE);
        // Attempts while a TaskManager or the broker is missing fail fast: allow many.
        RestartStrategyUtils.configureFixedDelayRestartStrategy(env, 100, 200L);
        return env;
    }

    /** Waits until a holding map holds, failing early when the job ends or fails first. */
    private static void awaitHold(JobClient job, String what) throws Exception {
        Await.until(
                what,
                GENEROUS,
                () -> {
                    if (job.getJobExecutionResult().isDone()) {
                        job.getJobExecutionResult().join(); // rethrows the job's failure
                        throw new AssertionError("the job ended before the failure: " + what);
                    }
                    return Hold.REACHED.getCount() == 0;
                },
                () -> "records mapped: " + Hold.SEEN.get());
    }

    private static void assertExactlyOnce(String reader, List<String> read) {
        Map<String, Integer> counts = SinkJobs.counts(read);
        assertThat(SinkJobs.duplicated(counts))
                .as("records the %s read more than once", reader)
                .isEmpty();
        assertThat(SinkJobs.missing(counts, RECORDS))
                .as("records the %s never read", reader)
                .isEmpty();
        assertThat(read).as("records the %s read", reader).hasSize(RECORDS);
    }

    /**
     * The state the holding maps share with the test (static: one job at a time per JVM): records
     * mapped, whether a checkpoint completed, the latch the test waits on and the one it releases
     * the map with, and the highest attempt of a map that opened.
     */
    private static final class Hold {
        static final AtomicInteger SEEN = new AtomicInteger();
        static final AtomicBoolean CHECKPOINT_COMPLETED = new AtomicBoolean();
        static final AtomicInteger LAST_ATTEMPT = new AtomicInteger();
        static volatile CountDownLatch REACHED = new CountDownLatch(1);
        static volatile CountDownLatch RELEASE = new CountDownLatch(1);
        static volatile boolean held;
        static volatile int holdAfter;

        static void reset(int after) {
            holdAfter = after;
            SEEN.set(0);
            CHECKPOINT_COMPLETED.set(false);
            LAST_ATTEMPT.set(0);
            REACHED = new CountDownLatch(1);
            RELEASE = new CountDownLatch(1);
            held = false;
        }

        static boolean due() {
            return !held && SEEN.get() >= holdAfter && CHECKPOINT_COMPLETED.get();
        }

        /** Holds the calling task until the test releases it. */
        static void hold() throws InterruptedException {
            REACHED.countDown();
            if (!RELEASE.await(GENEROUS.toSeconds(), TimeUnit.SECONDS)) {
                throw new IllegalStateException("the test never released the held task");
            }
            held = true;
        }

        /** Turns a number into its string, slowly enough for checkpoints while records flow. */
        static String map(Long value) throws InterruptedException {
            if (SEEN.incrementAndGet() % 50 == 0) {
                Thread.sleep(1);
            }
            return Long.toString(value);
        }
    }

    /**
     * Holds its task in {@code map} once {@link Hold#holdAfter} records were mapped and a
     * checkpoint completed, until the test has done its damage: every writer is then in the middle
     * of the input, with committed transactions behind it and an open one.
     */
    private static final class HoldingMap extends RichMapFunction<Long, String>
            implements CheckpointListener {

        @Override
        public void open(OpenContext openContext) {
            Hold.LAST_ATTEMPT.accumulateAndGet(
                    getRuntimeContext().getTaskInfo().getAttemptNumber(), Math::max);
        }

        @Override
        public String map(Long value) throws Exception {
            if (Hold.due()) {
                Hold.hold();
            }
            return Hold.map(value);
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            Hold.CHECKPOINT_COMPLETED.set(true);
        }
    }

    /**
     * Holds subtask 0's checkpoint in {@code snapshotState} — after its writer prepared the
     * checkpoint's transaction (the writer prepares before the barrier, before any snapshot) — once
     * {@link Hold#holdAfter} records were mapped and a checkpoint completed: the checkpoint cannot
     * complete, so the writers' transactions stay prepared, while subtask 1 goes on writing into a
     * new, open transaction.
     */
    private static final class HoldingSnapshotMap extends RichMapFunction<Long, String>
            implements CheckpointListener, CheckpointedFunction {

        @Override
        public void open(OpenContext openContext) {
            Hold.LAST_ATTEMPT.accumulateAndGet(
                    getRuntimeContext().getTaskInfo().getAttemptNumber(), Math::max);
        }

        @Override
        public String map(Long value) throws Exception {
            return Hold.map(value);
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            if (getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() == 0 && Hold.due()) {
                Hold.hold();
            }
        }

        @Override
        public void initializeState(FunctionInitializationContext context) {}

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            Hold.CHECKPOINT_COMPLETED.set(true);
        }
    }
}
