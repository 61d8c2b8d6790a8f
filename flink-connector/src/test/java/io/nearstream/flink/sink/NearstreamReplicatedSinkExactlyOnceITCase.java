package io.nearstream.flink.sink;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.Durability;
import io.nearstream.client.NearstreamClient;
import io.nearstream.client.StreamConfig;
import io.nearstream.client.StreamPlacement;
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
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The exactly-once sink on a replicated stream (replication 2) over a real cluster of three brokers
 * and ZooKeeper: each checkpoint's transaction is one transaction per streamlet scope it wrote to,
 * prepared at the checkpoint and committed from the completed checkpoint (docs/protocol.md,
 * "Transaction scopes"). A streamlet's leader is killed with SIGKILL in the middle of the job and
 * not started again: its follower takes over with every transaction as last acknowledged, the
 * writers and the committer follow it there, and every record is read exactly once with no
 * transaction left in any scope. Before that, a task failure restores the writers from state kept
 * per streamlet scope. The killed broker stays dead, so that test runs last.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class NearstreamReplicatedSinkExactlyOnceITCase {

    private static final int STREAMLETS = 3;

    /** A short ZooKeeper session: a killed leader is replaced within seconds. */
    private static final int SESSION_MS = 2000;

    @RegisterExtension
    static final NearstreamClusterExtension CLUSTER =
            new NearstreamClusterExtension(
                    List.of("host-a", "host-a", "host-a"),
                    List.of("--zookeeper-session-ms", Integer.toString(SESSION_MS)));

    @RegisterExtension static final MiniClusterExtension FLINK = MiniClusters.oneTaskManager(4);

    @Test
    @Order(1)
    void everyRecordIsReadExactlyOnceDespiteATaskFailure() throws Exception {
        String stream = "replicated-eo-failure";
        int records = 60_000;
        StreamPlacement placement = createReplicatedStream(stream);
        SinkJobs.numbersJob(
                        SinkJobs.sink(
                                CLUSTER.bootstrap(),
                                stream,
                                DeliveryGuarantee.EXACTLY_ONCE,
                                "rfail-job"),
                        records,
                        records / 3,
                        CheckpointingMode.EXACTLY_ONCE)
                .execute("replicated exactly-once, task failure");

        assertThat(FailOnceMap.failed()).as("the failure was injected").isTrue();
        assertExactlyOnce(stream, "rfail-job-", records, placement);
    }

    @Test
    @Order(2)
    void aStreamletsLeaderKilledInTheMiddleOfTheJobLosesAndDuplicatesNothing() throws Exception {
        String stream = "replicated-eo-kill";
        String prefix = "rkill-job";
        int records = 150_000;
        StreamPlacement before = createReplicatedStream(stream);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        env.enableCheckpointing(300, CheckpointingMode.EXACTLY_ONCE);
        // A failover takes a few seconds, well inside the delivery and request timeouts, so the
        // writers and the committer ride it through; should a task fail anyway, the job restarts
        // from the last checkpoint.
        RestartStrategyUtils.configureFixedDelayRestartStrategy(env, 20, 500L);
        FailOnceMap.reset(-1);
        env.fromSequence(0, records - 1)
                .map(new FailOnceMap())
                .sinkTo(
                        NearstreamSink.<String>builder()
                                .setBrokers(CLUSTER.bootstrap())
                                .setStream(stream)
                                .setRecordSerializer(SinkJobs.keyedStrings())
                                .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                                .setTransactionalIdPrefix(prefix)
                                .setDeliveryTimeoutMs(30_000)
                                .setRequestTimeoutMs(15_000)
                                .build());
        JobClient job = env.executeAsync("replicated exactly-once, leader killed");

        int streamlet = 0;
        int leader = before.owner(streamlet);
        Await.until(
                "a checkpoint committed records in streamlet " + streamlet,
                Duration.ofSeconds(60),
                () -> hasCommittedRecords(leader, stream, streamlet),
                () -> "status " + job.getJobStatus().join());
        CLUSTER.kill(leader - 1);
        assertThat(job.getJobStatus().get(10, TimeUnit.SECONDS))
                .as("the leader died under a running job")
                .isEqualTo(JobStatus.RUNNING);

        Await.until(
                "the job finishes",
                Duration.ofSeconds(120),
                () -> job.getJobStatus().get().isGloballyTerminalState(),
                () -> "status " + job.getJobStatus().join());
        assertThat(job.getJobStatus().get(10, TimeUnit.SECONDS)).isEqualTo(JobStatus.FINISHED);

        StreamPlacement after = placement(stream);
        assertThat(after.owner(streamlet)).as("streamlet 0 failed over").isNotEqualTo(leader);
        assertExactlyOnce(stream, prefix + "-", records, after);
    }

    // ---- helpers ------------------------------------------------------------------------------

    /** Replication 2, durable, small segments (transactions span segments); its placement. */
    private static StreamPlacement createReplicatedStream(String stream) throws Exception {
        try (NearstreamClient client = NearstreamClient.connect(CLUSTER.bootstrap())) {
            client.createStream(
                            new StreamConfig(
                                    stream,
                                    STREAMLETS,
                                    128 * 1024,
                                    4,
                                    1,
                                    Durability.ASYNC,
                                    -1,
                                    -1,
                                    2))
                    .get(30, TimeUnit.SECONDS);
        }
        StreamPlacement p = placement(stream);
        assertThat(p.replicated()).isTrue();
        return p;
    }

    private static StreamPlacement placement(String stream) throws Exception {
        try (NearstreamClient client = NearstreamClient.connect(CLUSTER.bootstrap())) {
            return client.clusterMetadata(stream)
                    .get(10, TimeUnit.SECONDS)
                    .placement(stream)
                    .orElseThrow();
        }
    }

    /** Whether broker {@code id}, leading {@code streamlet}, holds committed records of it. */
    private static boolean hasCommittedRecords(int id, String stream, int streamlet) {
        try {
            List<StreamletMetadata> md =
                    CLUSTER.broker(id - 1).client().metadata(stream, streamlet).join();
            return md.stream().anyMatch(m -> !m.groups().isEmpty());
        } catch (RuntimeException e) {
            return false;
        }
    }

    private static void assertExactlyOnce(
            String stream, String prefix, int records, StreamPlacement placement) throws Exception {
        List<String> read;
        try (NearstreamClient client = NearstreamClient.connect(CLUSTER.bootstrap())) {
            read = StreamReader.readAll(client, stream);
        }
        Map<String, Integer> counts = SinkJobs.counts(read);
        assertThat(SinkJobs.duplicated(counts)).as("records read more than once").isEmpty();
        assertThat(SinkJobs.missing(counts, records)).as("records never read").isEmpty();
        assertThat(counts).as("nothing else was written").hasSize(records);
        for (int s = 0; s < STREAMLETS; s++) {
            int streamlet = s;
            int leader = placement.owner(s);
            // Everything was committed or aborted in every scope, the failed attempts' too.
            Await.until(
                    "no transaction of " + prefix + " is left in streamlet " + s + "'s scope",
                    Duration.ofSeconds(30),
                    () ->
                            CLUSTER.broker(leader - 1)
                                    .client()
                                    .txnList(stream, prefix, streamlet)
                                    .join()
                                    .isEmpty(),
                    () ->
                            String.valueOf(
                                    CLUSTER.broker(leader - 1)
                                            .client()
                                            .txnList(stream, "", streamlet)
                                            .join()));
        }
    }
}
