package io.nearstream.benchmarks.sink;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.benchmarks.sink.SinkRun.Visibility;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The sink benchmark once, tiny (every sink for 2 s after no warm-up, half-second checkpoints), so
 * it keeps running: every sink writes, the broker takes every record, the exactly-once transactions
 * are timed and none is visible before its commit, the files are written. Its figures mean nothing.
 */
class SinkThroughputBenchmarkITCase {

    @Test
    void everySinkRunsAndIsMeasured(@TempDir Path out) throws Exception {
        SinkBenchmarkOptions options =
                SinkBenchmarkOptions.parse(
                        new String[] {
                            "--repetitions", "1",
                            "--warmup-s", "0",
                            "--measure-s", "2",
                            "--checkpoint-ms", "500",
                            "--workers", "1",
                            "--out", out.toString()
                        });

        List<SinkRun> runs = SinkThroughputBenchmark.run(options, "test");

        assertThat(runs).extracting(SinkRun::kind).containsExactlyElementsOf(SinkKind.COMPARED);
        for (SinkRun r : runs) {
            assertThat(r.records()).as("%s records", r.kind()).isPositive();
            assertThat(r.brokerRecords())
                    .as("%s: the broker took every record", r.kind())
                    .isGreaterThanOrEqualTo(r.recordsAtWindowEnd());
            assertThat(r.jobCpuSeconds()).isPositive();
            assertThat(r.brokerCpuSeconds()).isGreaterThanOrEqualTo(0);
            assertThat(r.checkpoints()).isPositive();
            assertThat(r.visibility() != null).isEqualTo(r.kind() == SinkKind.NEARSTREAM_EO);
        }
        Visibility v = runs.get(1).visibility();
        assertThat(v.timed()).isNotEmpty();
        assertThat(v.visibleBeforeCommit()).isZero();
        assertThat(v.commitToVisibleMs()).allSatisfy(ms -> assertThat(ms).isBetween(0.0, 10_000.0));
        assertThat(out.resolve("sink-throughput.csv")).exists();
        assertThat(out.resolve("sink-throughput-txns.csv")).exists();
        assertThat(Files.readString(out.resolve("sink-throughput.md")))
                .contains("## Ratios and the spec's targets");
    }
}
