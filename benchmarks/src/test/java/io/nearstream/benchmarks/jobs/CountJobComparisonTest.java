package io.nearstream.benchmarks.jobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The comparison's mode list and the verdicts its results page prints. */
class CountJobComparisonTest {

    private static final long RECORDS = 10_000_000;

    /** A run of RECORDS records in {@code seconds}, with the given CPU seconds. */
    private static JobMeasurement run(
            SourceMode mode, double seconds, double jobCpu, double brokerCpu) {
        WorkloadResult result =
                new WorkloadResult(RECORDS, RECORDS, RECORDS * 100, 0L, (long) (seconds * 1e9));
        return new JobMeasurement(
                CountWorkload.NAME, mode, 1, result, seconds, seconds + 1, jobCpu, brokerCpu);
    }

    @Test
    void modesAlwaysHoldPullAndPush() {
        assertThat(CountJobComparison.modes("pull,push,kafka"))
                .containsExactly(SourceMode.PULL, SourceMode.PUSH, SourceMode.KAFKA);
        assertThat(CountJobComparison.modes("push, pull,push"))
                .containsExactly(SourceMode.PUSH, SourceMode.PULL);
        assertThatThrownBy(() -> CountJobComparison.modes("push,kafka"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("pull and push");
        assertThatThrownBy(() -> CountJobComparison.modes("pull,push,rabbit"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown mode");
    }

    @Test
    void theKafkaTableComparesMediansOfRecordsPerSecondAndTotalCpu() {
        List<JobMeasurement> runs = new ArrayList<>();
        runs.add(run(SourceMode.PULL, 1.0, 0.8, 0.2));
        runs.add(run(SourceMode.PUSH, 0.4, 0.3, 0.1));
        // Kafka: 6x slower than push and 6x the CPU (the median of three runs).
        runs.add(run(SourceMode.KAFKA, 2.4, 2.0, 0.4));
        runs.add(run(SourceMode.KAFKA, 2.4, 2.1, 0.3));
        runs.add(run(SourceMode.KAFKA, 100.0, 50.0, 50.0)); // an outlier the median ignores

        String page = CountJobComparison.markdown(runs, List.of(1), "setting", "--modes x");

        assertThat(page).startsWith("# Count job: pull vs push vs Flink's Kafka source");
        // push 25 M/s vs kafka 4.17 M/s; total CPU 0.040 vs 0.240 s per M records.
        assertThat(page).contains("| 1 | 4.17 M | 25.00 M | 6.00 | 0.240 | 0.040 | 6.00 |");
        assertThat(page).contains("| met |");

        List<JobMeasurement> slowPush = new ArrayList<>(runs.subList(0, 1));
        slowPush.add(run(SourceMode.PUSH, 0.6, 0.3, 0.1)); // 4x Kafka's rate: below 5x
        slowPush.addAll(runs.subList(2, 5));
        String missed = CountJobComparison.markdown(slowPush, List.of(1), "setting", "--modes x");
        assertThat(missed).contains("| 1 | 4.17 M | 16.67 M | 4.00 |").doesNotContain("| met |");
    }

    @Test
    void withoutKafkaThereIsNoKafkaTable() {
        String page =
                CountJobComparison.markdown(
                        List.of(
                                run(SourceMode.PULL, 1.0, 0.8, 0.2),
                                run(SourceMode.PUSH, 0.4, 0.3, 0.1)),
                        List.of(1),
                        "setting",
                        "x");
        assertThat(page).startsWith("# Count job: pull vs push\n").doesNotContain("kafka");
        // push 2.5x pull's rate and less broker CPU.
        assertThat(page).contains("| 1 | 10.00 M | 25.00 M | 2.50 |").contains("| met |");
    }
}
