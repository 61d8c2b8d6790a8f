package io.nearstream.benchmarks.jobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.benchmarks.PreloadedStream;
import io.nearstream.process.BrokerProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The benchmark jobs against a real {@code nearstreamd} on a small pre-loaded stream, once per
 * source mode, so the harness keeps working: every record read exactly once, the same filter result
 * in both modes, the figures filled in, and no push region left behind.
 */
class JobRunnerITCase {

    private static final int RECORDS = 30_000;

    private static PreloadedStream stream;
    private static LocalFlinkCluster cluster;

    @BeforeAll
    static void start() throws Exception {
        stream = PreloadedStream.start(BrokerProcess.start(1), 4, RECORDS, 100, 16 * 1024);
        cluster = LocalFlinkCluster.start(2);
    }

    @AfterAll
    static void stop() throws Exception {
        try {
            if (cluster != null) {
                cluster.close();
            }
        } finally {
            if (stream != null) {
                stream.close();
            }
        }
    }

    private static JobOptions options(String workload, SourceMode mode, int parallelism) {
        return new JobOptions(
                workload,
                mode,
                stream.broker().address(),
                stream.stream(),
                parallelism,
                RECORDS,
                JobOptions.DEFAULT_FETCH_BYTES,
                4,
                64 * 1024,
                FilterWorkload.DEFAULT_PATTERN);
    }

    @Test
    void countJobReadsEveryRecordOnceInEachMode() throws Exception {
        for (SourceMode mode : List.of(SourceMode.PULL, SourceMode.PUSH)) {
            JobMeasurement m =
                    JobRunner.run(options(CountWorkload.NAME, mode, 2), cluster, stream.client());

            assertThat(m.mode()).isEqualTo(mode);
            assertThat(m.records()).as("%s records", mode).isEqualTo(RECORDS);
            assertThat(m.result().recordsOut()).isEqualTo(RECORDS);
            assertThat(m.result().valueBytes()).isEqualTo(RECORDS * 100L);
            assertThat(m.seconds()).isPositive();
            assertThat(m.jobCpuSeconds()).isPositive();
            assertThat(m.brokerCpuSeconds()).isGreaterThanOrEqualTo(0);
            assertThat(m.toJson())
                    .startsWith("{\"workload\":\"count\",\"mode\":\"" + mode.label() + "\"")
                    .contains("\"parallelism\":2,\"records\":" + RECORDS + ",");
        }
        assertThat(pushRegions()).isEmpty();
    }

    @Test
    void filterJobKeepsTheSameRecordsInEachMode() throws Exception {
        JobMeasurement pull =
                JobRunner.run(
                        options(FilterWorkload.NAME, SourceMode.PULL, 1), cluster, stream.client());
        JobMeasurement push =
                JobRunner.run(
                        options(FilterWorkload.NAME, SourceMode.PUSH, 1), cluster, stream.client());

        assertThat(pull.records()).isEqualTo(RECORDS);
        assertThat(push.records()).isEqualTo(RECORDS);
        assertThat(pull.result().recordsOut()).isPositive().isLessThan(RECORDS);
        assertThat(push.result().recordsOut()).isEqualTo(pull.result().recordsOut());
    }

    @Test
    void aJobThatReadsOtherThanTheExpectedCountFails() {
        JobOptions wrong =
                new JobOptions(
                        CountWorkload.NAME,
                        SourceMode.PULL,
                        stream.broker().address(),
                        stream.stream(),
                        1,
                        RECORDS + 1,
                        JobOptions.DEFAULT_FETCH_BYTES,
                        4,
                        64 * 1024,
                        FilterWorkload.DEFAULT_PATTERN);

        assertThatThrownBy(() -> JobRunner.run(wrong, cluster, stream.client()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("the stream holds " + String.format("%,d", RECORDS + 1));
    }

    /** Regions of this test's broker (other processes on the machine may have their own). */
    private static List<String> pushRegions() throws IOException {
        try (Stream<Path> files = Files.list(Path.of("/dev/shm"))) {
            return files.map(p -> p.getFileName().toString())
                    .filter(n -> n.startsWith("nearstream-push-" + stream.broker().pid() + "-"))
                    .toList();
        }
    }
}
