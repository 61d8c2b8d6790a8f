package io.nearstream.flink.sink;

import static io.nearstream.flink.sink.testutils.JobFailures.failureOf;
import static io.nearstream.flink.sink.testutils.JobFailures.messages;
import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.Durability;
import io.nearstream.client.StreamConfig;
import io.nearstream.client.TransactionInfo;
import io.nearstream.flink.sink.testutils.FailOnceMap;
import io.nearstream.flink.sink.testutils.SinkJobs;
import io.nearstream.flink.sink.testutils.StreamReader;
import io.nearstream.flink.source.testutils.Await;
import io.nearstream.flink.testutils.MiniClusters;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
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
 * The exactly-once sink against the real broker: through a task failure and restart, every record
 * is read exactly once; what a cancelled job left uncommitted is never read; a second job with the
 * same prefix fences the first, which fails saying so; a record larger than a segment fails the job
 * naming the cause.
 */
class NearstreamSinkExactlyOnceITCase {

    /**
     * Records of the failure-and-restart job: 200 000 in CI; the long variant sets the system
     * property, e.g. {@code mvn -B verify -pl flink-connector -DskipSanitizers
     * -Dit.test=NearstreamSinkExactlyOnceITCase -Dnearstream.sink.it.records=1000000}.
     */
    private static final int RECORDS = Integer.getInteger("nearstream.sink.it.records", 200_000);

    private static final int STREAMLETS = 4;
    private static final int PARALLELISM = 2;

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    @RegisterExtension static final MiniClusterExtension FLINK = MiniClusters.oneTaskManager(4);

    @Test
    void everyRecordIsReadExactlyOnceDespiteATaskFailureAfterACheckpoint() throws Exception {
        String stream = "sink-exactly-once";
        // Durable, and small segments: transactions span segments and commit into many groups.
        BROKER.createStream(
                new StreamConfig(stream, STREAMLETS, 256 * 1024, 4, 1, Durability.ASYNC, -1, -1));
        SinkJobs.numbersJob(
                        sink(stream, "eo-job"),
                        RECORDS,
                        RECORDS / 3,
                        CheckpointingMode.EXACTLY_ONCE)
                .execute("exactly-once");

        assertThat(FailOnceMap.failed()).as("the failure was injected").isTrue();
        Map<String, Integer> counts =
                SinkJobs.counts(StreamReader.readAll(BROKER.client(), stream));
        assertThat(SinkJobs.duplicated(counts)).as("records read more than once").isEmpty();
        assertThat(SinkJobs.missing(counts, RECORDS)).as("records never read").isEmpty();
        assertThat(counts).as("nothing else was written").hasSize(RECORDS);
        // Everything was committed or aborted: the zombie attempt's transactions too.
        assertThat(BROKER.client().txnList(stream, "eo-job-").join()).isEmpty();
    }

    @Test
    void whatACancelledJobLeftUncommittedIsNeverRead() throws Exception {
        String stream = "sink-cancelled";
        BROKER.createStream(StreamConfig.of(stream, STREAMLETS));
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(PARALLELISM);
        // No checkpoint completes before the cancel: nothing is ever prepared or committed.
        env.enableCheckpointing(3_600_000, CheckpointingMode.EXACTLY_ONCE);
        FailOnceMap.reset(-1);
        env.fromSequence(0, Long.MAX_VALUE - 1)
                .map(new FailOnceMap())
                .sinkTo(sink(stream, "cancelled"));
        JobClient job = env.executeAsync("cancelled");
        Await.until(
                "both writers have records in open transactions",
                Duration.ofSeconds(60),
                () -> openBytes(stream, "cancelled-") > 0 && openTransactions(stream) == 2,
                () -> String.valueOf(BROKER.client().txnList(stream, "").join()));

        job.cancel().get(60, TimeUnit.SECONDS);
        Await.until(
                "the job is cancelled",
                Duration.ofSeconds(60),
                () -> job.getJobStatus().get() == JobStatus.CANCELED,
                () -> "status " + job.getJobStatus().join());

        assertThat(StreamReader.readAll(BROKER.client(), stream)).isEmpty();
        // The writers aborted their transactions on close (else the next TxnInit would).
        Await.until(
                "no transaction is left open",
                Duration.ofSeconds(30),
                () -> BROKER.client().txnList(stream, "").join().isEmpty(),
                () -> String.valueOf(BROKER.client().txnList(stream, "").join()));
    }

    @Test
    void aSecondJobWithTheSamePrefixFencesTheFirstWhichSaysSo() throws Exception {
        String stream = "sink-fenced";
        BROKER.createStream(StreamConfig.of(stream, STREAMLETS));
        FailOnceMap.reset(-1);
        JobClient first = unboundedJob(stream, "shared").executeAsync("first");
        Await.until(
                "the first job writes in a transaction",
                Duration.ofSeconds(60),
                () -> openBytes(stream, "shared-") > 0,
                () -> String.valueOf(BROKER.client().txnList(stream, "").join()));

        JobClient second = unboundedJob(stream, "shared").executeAsync("second");
        try {
            Throwable failure = null;
            try {
                first.getJobExecutionResult().get(120, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                failure = e;
            }
            assertThat(failure).as("the first job failed").isNotNull();
            assertThat(messages(failure))
                    .contains("another writer took over transactional id 'shared-1-0'")
                    .contains("transactional id prefix 'shared'")
                    .contains("TXN_FENCED");
        } finally {
            second.cancel().get(60, TimeUnit.SECONDS);
        }
    }

    @Test
    void aRecordLargerThanASegmentFailsTheJobNamingTheCause() {
        String stream = "sink-eo-small-segments";
        BROKER.createStream(new StreamConfig(stream, 1, 4096, 0, 0, Durability.NONE, -1, -1));
        StreamExecutionEnvironment env =
                SinkJobs.oversizedRecordJob(sink(stream, "big"), CheckpointingMode.EXACTLY_ONCE);
        assertThat(messages(failureOf(env)))
                .contains("Nearstream sink failed to write to stream '" + stream + "'")
                .contains("CHUNK_TOO_LARGE")
                .contains("does not fit in one segment");
    }

    private static NearstreamSink<String> sink(String stream, String prefix) {
        return SinkJobs.sink(BROKER.address(), stream, DeliveryGuarantee.EXACTLY_ONCE, prefix);
    }

    /** A job of one writer that runs until cancelled or failed, without restarts. */
    private static StreamExecutionEnvironment unboundedJob(String stream, String prefix) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        env.enableCheckpointing(3_600_000, CheckpointingMode.EXACTLY_ONCE);
        RestartStrategyUtils.configureNoRestartStrategy(env);
        env.fromSequence(0, Long.MAX_VALUE - 1).map(new FailOnceMap()).sinkTo(sink(stream, prefix));
        return env;
    }

    private static long openBytes(String stream, String prefix) {
        return BROKER.client().txnList(stream, prefix).join().stream()
                .filter(t -> t.state() == TransactionInfo.State.OPEN)
                .mapToLong(TransactionInfo::bytes)
                .sum();
    }

    private static long openTransactions(String stream) {
        List<TransactionInfo> all = BROKER.client().txnList(stream, "").join();
        return all.stream().filter(t -> t.bytes() > 0).count();
    }
}
