package io.nearstream.flink.sink;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.Durability;
import io.nearstream.client.NearstreamClient;
import io.nearstream.client.StreamConfig;
import io.nearstream.client.StreamletMetadata;
import io.nearstream.flink.sink.testutils.FailOnceMap;
import io.nearstream.flink.sink.testutils.SinkJobs;
import io.nearstream.flink.sink.testutils.StreamReader;
import io.nearstream.flink.source.testutils.Await;
import io.nearstream.flink.testutils.MiniClusters;
import io.nearstream.testing.NearstreamClusterExtension;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.util.RestartStrategyUtils;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The exactly-once sink over a real cluster of three brokers and ZooKeeper: each checkpoint's
 * transaction is one broker transaction per broker, prepared at the checkpoint and committed from
 * the completed checkpoint (two-phase commit; docs/flink-connector.md). Through a task failure, and
 * through a broker killed with SIGKILL in the middle of the job and started again, every record is
 * read exactly once and no transaction is left on any broker.
 */
class NearstreamClusterSinkExactlyOnceITCase {

    private static final int STREAMLETS = 6;

    /** A short ZooKeeper session: a killed broker's registration goes within seconds. */
    private static final int SESSION_MS = 2000;

    private static final int DELIVERY_TIMEOUT_MS = 4_000;

    @RegisterExtension
    static final NearstreamClusterExtension CLUSTER =
            new NearstreamClusterExtension(
                    List.of("host-a", "host-a", "host-a"),
                    List.of("--zookeeper-session-ms", Integer.toString(SESSION_MS)));

    @RegisterExtension static final MiniClusterExtension FLINK = MiniClusters.oneTaskManager(4);

    @Test
    void everyRecordIsReadExactlyOnceAcrossThreeBrokersDespiteATaskFailure() throws Exception {
        String stream = "cluster-eo-failure";
        int records = 100_000;
        createDurableStream(stream);
        SinkJobs.numbersJob(
                        sink(stream, "ceo-job"),
                        records,
                        records / 3,
                        CheckpointingMode.EXACTLY_ONCE)
                .execute("cluster exactly-once");

        assertThat(FailOnceMap.failed()).as("the failure was injected").isTrue();
        assertExactlyOnce(stream, "ceo-job-", records);
    }

    @Test
    void aBrokerKilledInTheMiddleOfTheJobAndStartedAgainLosesAndDuplicatesNothing()
            throws Exception {
        String stream = "cluster-eo-kill";
        int records = 400_000;
        createDurableStream(stream);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        env.enableCheckpointing(300, CheckpointingMode.EXACTLY_ONCE);
        // The job may fail while the broker is gone (its part of a transaction cannot be written
        // or prepared); it restarts from the last checkpoint until the broker is back.
        RestartStrategyUtils.configureFixedDelayRestartStrategy(env, 60, 500L);
        FailOnceMap.reset(-1);
        env.fromSequence(0, records - 1)
                .map(new FailOnceMap())
                .sinkTo(
                        NearstreamSink.<String>builder()
                                .setBrokers(CLUSTER.bootstrap())
                                .setStream(stream)
                                .setRecordSerializer(SinkJobs.keyedStrings())
                                .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                                .setTransactionalIdPrefix("kill-job")
                                .setDeliveryTimeoutMs(DELIVERY_TIMEOUT_MS)
                                .setRequestTimeoutMs(2_000)
                                .build());
        JobClient job = env.executeAsync("cluster exactly-once, broker killed");

        int victim = 1;
        Await.until(
                "a checkpoint committed records on broker " + CLUSTER.brokerId(victim),
                Duration.ofSeconds(60),
                () -> hasCommittedRecords(victim, stream),
                () -> "status " + job.getJobStatus().join());
        CLUSTER.kill(victim);
        assertThat(job.getJobStatus().get(10, TimeUnit.SECONDS))
                .as("the broker died under a running job")
                .isEqualTo(JobStatus.RUNNING);
        // Longer than the delivery timeout: the writers' records for the dead broker fail, the job
        // fails and is restored (TxnInit on every broker) until the broker is back.
        Thread.sleep(DELIVERY_TIMEOUT_MS + 3 * SESSION_MS);
        CLUSTER.restart(victim);

        Await.until(
                "the job finishes",
                Duration.ofSeconds(240),
                () -> job.getJobStatus().get().isGloballyTerminalState(),
                () -> "status " + job.getJobStatus().join());
        assertThat(job.getJobStatus().get(10, TimeUnit.SECONDS)).isEqualTo(JobStatus.FINISHED);
        assertExactlyOnce(stream, "kill-job-", records);
    }

    // ---- helpers ------------------------------------------------------------------------------

    private static void createDurableStream(String stream) throws Exception {
        try (NearstreamClient client = NearstreamClient.connect(CLUSTER.bootstrap())) {
            // Durable, so that a killed broker keeps its prepared transactions; small segments, so
            // that transactions span segments.
            client.createStream(
                            new StreamConfig(
                                    stream, STREAMLETS, 256 * 1024, 4, 1, Durability.ASYNC, -1, -1))
                    .get(30, TimeUnit.SECONDS);
        }
    }

    private static NearstreamSink<String> sink(String stream, String prefix) {
        return SinkJobs.sink(CLUSTER.bootstrap(), stream, DeliveryGuarantee.EXACTLY_ONCE, prefix);
    }

    /** Whether broker {@code i} holds committed records of its own streamlets of {@code stream}. */
    private static boolean hasCommittedRecords(int i, String stream) {
        try {
            List<StreamletMetadata> own = CLUSTER.broker(i).client().metadata(stream).join();
            return own.stream().anyMatch(m -> !m.groups().isEmpty());
        } catch (RuntimeException e) {
            return false; // not created on that broker yet
        }
    }

    private static void assertExactlyOnce(String stream, String prefix, int records)
            throws Exception {
        List<String> read;
        try (NearstreamClient client = NearstreamClient.connect(CLUSTER.bootstrap())) {
            read = StreamReader.readAll(client, stream);
        }
        Map<String, Integer> counts = SinkJobs.counts(read);
        assertThat(SinkJobs.duplicated(counts)).as("records read more than once").isEmpty();
        assertThat(SinkJobs.missing(counts, records)).as("records never read").isEmpty();
        assertThat(counts).as("nothing else was written").hasSize(records);
        for (int i = 0; i < CLUSTER.size(); i++) {
            int broker = i;
            assertThat(hasCommittedRecords(broker, stream))
                    .as("broker %d stores a part of the records", CLUSTER.brokerId(broker))
                    .isTrue();
            // Everything was committed or aborted on every broker, the failed attempts' too.
            Await.until(
                    "no transaction of " + prefix + " is left on broker " + CLUSTER.brokerId(i),
                    Duration.ofSeconds(30),
                    () -> CLUSTER.broker(broker).client().txnList(stream, prefix).join().isEmpty(),
                    () ->
                            String.valueOf(
                                    CLUSTER.broker(broker).client().txnList(stream, "").join()));
        }
    }
}
