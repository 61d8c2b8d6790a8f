package io.nearstream.benchmarks.jobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.Map;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.jupiter.api.Test;

/** The {@code --output-*} flags of {@link StreamOutput}, checked without a broker. */
class StreamOutputTest {

    private static JobOptions options(SourceMode mode, String... params) {
        Map<String, String> p = new HashMap<>();
        for (int i = 0; i < params.length; i += 2) {
            p.put(params[i], params[i + 1]);
        }
        return JobOptions.bounded(YsbWorkload.NAME, mode, "127.0.0.1:7420", "in", 2, 0, p);
    }

    @Test
    void theFlagsAreWorkloadParametersJobRunnerHandsOn() {
        assertThat(Workload.PARAMS).containsAll(StreamOutput.PARAMS);
        java.util.Set<String> known = new java.util.HashSet<>(Workload.PARAMS);
        known.add("workload");
        known.add("mode");
        Flags flags =
                new Flags(
                        new String[] {
                            "--workload",
                            "ysb",
                            "--mode",
                            "pull",
                            "--output-stream",
                            "out",
                            "--output-guarantee",
                            "exactly-once",
                            "--checkpoint-interval-ms",
                            "250"
                        },
                        known);
        JobOptions o = JobRunner.options(flags, "127.0.0.1:7420", 0);
        assertThat(StreamOutput.requested(o)).isTrue();
        assertThat(StreamOutput.guarantee(o)).isEqualTo(DeliveryGuarantee.EXACTLY_ONCE);
        assertThat(StreamOutput.checkpointIntervalMs(o)).isEqualTo(250);
    }

    @Test
    void guaranteesAndTheirDefault() {
        assertThat(StreamOutput.guarantee(options(SourceMode.PULL, "output-stream", "o")))
                .isEqualTo(DeliveryGuarantee.AT_LEAST_ONCE);
        assertThat(StreamOutput.guarantee(options(SourceMode.PULL, "output-guarantee", "none")))
                .isEqualTo(DeliveryGuarantee.NONE);
        assertThat(
                        StreamOutput.guarantee(
                                options(SourceMode.PULL, "output-guarantee", "Exactly-Once")))
                .isEqualTo(DeliveryGuarantee.EXACTLY_ONCE);
        assertThatThrownBy(
                        () ->
                                StreamOutput.guarantee(
                                        options(SourceMode.PULL, "output-guarantee", "twice")))
                .hasMessageContaining("--output-guarantee must be none, at-least-once or");
    }

    @Test
    void checkpointsByDefaultOnlyWhenTheResultsGoToAStream() {
        assertThat(StreamOutput.checkpointIntervalMs(options(SourceMode.PULL))).isZero();
        assertThat(
                        StreamOutput.checkpointIntervalMs(
                                options(SourceMode.PULL, "output-stream", "o")))
                .isEqualTo(StreamOutput.DEFAULT_CHECKPOINT_INTERVAL_MS);
        assertThat(
                        StreamOutput.checkpointIntervalMs(
                                options(SourceMode.PULL, "checkpoint-interval-ms", "300")))
                .isEqualTo(300);
        assertThatThrownBy(
                        () ->
                                StreamOutput.checkpointIntervalMs(
                                        options(SourceMode.PULL, "checkpoint-interval-ms", "-1")))
                .hasMessageContaining("--checkpoint-interval-ms");

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        StreamOutput.configureCheckpoints(env, options(SourceMode.PULL));
        assertThat(env.getCheckpointInterval()).isEqualTo(-1);
    }

    @Test
    void theOutputBrokerIsTheSourceBrokerUnlessKafkaIsRead() {
        assertThat(StreamOutput.broker(options(SourceMode.PUSH, "output-stream", "o")))
                .isEqualTo("127.0.0.1:7420");
        assertThat(
                        StreamOutput.broker(
                                options(
                                        SourceMode.KAFKA,
                                        "output-stream",
                                        "o",
                                        "output-broker",
                                        "10.0.0.1:7420")))
                .isEqualTo("10.0.0.1:7420");
        assertThatThrownBy(
                        () -> StreamOutput.broker(options(SourceMode.KAFKA, "output-stream", "o")))
                .hasMessageContaining("--output-broker");
    }

    @Test
    void anExactlyOnceOutputBuildsAnExactlyOnceSink() {
        JobOptions o =
                options(
                        SourceMode.PULL,
                        "output-stream",
                        "ysb-out",
                        "output-guarantee",
                        "exactly-once");
        assertThat(StreamOutput.sink(o, r -> "v", r -> "k").getDeliveryGuarantee())
                .isEqualTo(DeliveryGuarantee.EXACTLY_ONCE);
        assertThat(StreamOutput.describe(o)).isEqualTo("to stream ysb-out (exactly-once)");
    }

    @Test
    void aWorkloadWithNeitherOutputIsRefusedNamingBoth() {
        assertThatThrownBy(() -> WordCountWorkload.outputDir(options(SourceMode.PULL), "ysb"))
                .hasMessageContaining("--output-dir DIR or --output-stream NAME");
        assertThat(WordCountWorkload.outputDir(options(SourceMode.PULL, "output-stream", "o"), "x"))
                .isNull();
    }
}
