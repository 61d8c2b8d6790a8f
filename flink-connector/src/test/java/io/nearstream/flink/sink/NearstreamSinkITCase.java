package io.nearstream.flink.sink;

import static io.nearstream.flink.sink.testutils.JobFailures.failureOf;
import static io.nearstream.flink.sink.testutils.JobFailures.messages;
import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.Durability;
import io.nearstream.client.StreamConfig;
import io.nearstream.flink.sink.testutils.FailOnceMap;
import io.nearstream.flink.sink.testutils.SinkJobs;
import io.nearstream.flink.sink.testutils.StreamReader;
import io.nearstream.flink.testutils.MiniClusters;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.util.List;
import java.util.Map;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.util.RestartStrategyUtils;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The sink without transactions, against the real broker: at least once through a task failure,
 * NONE, and the job failures a user must be able to read (no broker, no stream, a record larger
 * than a segment).
 */
class NearstreamSinkITCase {

    private static final int RECORDS = 50_000;
    private static final int STREAMLETS = 4;

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    @RegisterExtension static final MiniClusterExtension FLINK = MiniClusters.oneTaskManager(4);

    @Test
    void atLeastOnceDeliversEveryRecordDespiteATaskFailure() throws Exception {
        String stream = "sink-at-least-once";
        BROKER.createStream(StreamConfig.of(stream, STREAMLETS));
        SinkJobs.numbersJob(
                        SinkJobs.sink(
                                BROKER.address(), stream, DeliveryGuarantee.AT_LEAST_ONCE, null),
                        RECORDS,
                        RECORDS / 3,
                        CheckpointingMode.AT_LEAST_ONCE)
                .execute("at-least-once");

        assertThat(FailOnceMap.failed()).as("the failure was injected").isTrue();
        List<String> read = StreamReader.readAll(BROKER.client(), stream);
        Map<String, Integer> counts = SinkJobs.counts(read);
        assertThat(SinkJobs.missing(counts, RECORDS)).as("records never read").isEmpty();
        assertThat(counts).as("nothing else was written").hasSize(RECORDS);
    }

    @Test
    void noneDeliversEveryRecordOfAJobThatFinishes() throws Exception {
        String stream = "sink-none";
        BROKER.createStream(StreamConfig.of(stream, STREAMLETS));
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        FailOnceMap.reset(-1);
        env.fromSequence(0, 9_999)
                .map(new FailOnceMap())
                .sinkTo(SinkJobs.sink(BROKER.address(), stream, DeliveryGuarantee.NONE, null));
        env.execute("none");

        Map<String, Integer> counts =
                SinkJobs.counts(StreamReader.readAll(BROKER.client(), stream));
        assertThat(SinkJobs.missing(counts, 10_000)).isEmpty();
        assertThat(SinkJobs.duplicated(counts)).as("no failure, no replay").isEmpty();
    }

    @Test
    void aMissingStreamFailsTheJobNamingIt() {
        Throwable failure = failureOf(job("no-such-stream", BROKER.address(), 10));
        assertThat(messages(failure))
                .contains("Nearstream sink cannot open stream 'no-such-stream'")
                .contains("STREAM_NOT_FOUND");
    }

    @Test
    void anUnreachableBrokerFailsTheJobNamingIt() {
        Throwable failure = failureOf(job("s", "127.0.0.1:1", 10));
        assertThat(messages(failure))
                .contains("at broker 127.0.0.1:1")
                .contains("cannot connect to 127.0.0.1:1");
    }

    @Test
    void aRecordLargerThanASegmentFailsTheJobNamingTheCause() {
        String stream = "sink-small-segments";
        BROKER.createStream(new StreamConfig(stream, 1, 4096, 0, 0, Durability.NONE, -1, -1));
        StreamExecutionEnvironment env =
                SinkJobs.oversizedRecordJob(
                        SinkJobs.sink(
                                BROKER.address(), stream, DeliveryGuarantee.AT_LEAST_ONCE, null),
                        CheckpointingMode.AT_LEAST_ONCE);
        assertThat(messages(failureOf(env)))
                .contains("Nearstream sink failed to write to stream '" + stream + "'")
                .contains("CHUNK_TOO_LARGE");
    }

    private static StreamExecutionEnvironment job(String stream, String broker, int records) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        RestartStrategyUtils.configureNoRestartStrategy(env);
        env.fromSequence(0, records - 1)
                .map(String::valueOf)
                .sinkTo(SinkJobs.sink(broker, stream, DeliveryGuarantee.AT_LEAST_ONCE, null));
        return env;
    }
}
