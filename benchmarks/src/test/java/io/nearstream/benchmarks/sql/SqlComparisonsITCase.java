package io.nearstream.benchmarks.sql;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.benchmarks.jobs.Flags;
import io.nearstream.benchmarks.jobs.JobMeasurement;
import io.nearstream.benchmarks.jobs.SourceMode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The two SQL benchmark programs, once each on a tiny input (their figures mean nothing here):
 * every job they run checks its own result, so this is where a change that breaks one of the
 * statements, the Kafka table or the job submission shows.
 */
class SqlComparisonsITCase {

    @TempDir Path out;

    @Test
    void ysbSqlAndDataStreamJobsRunAndCountEveryView() throws Exception {
        String[] args = {
            "--events",
            "20000",
            "--event-rate",
            "1000",
            "--repetitions",
            "1",
            "--out",
            out.toString()
        };
        List<JobMeasurement> runs =
                SqlYsbComparison.run(
                        new Flags(args, Set.of("events", "event-rate", "repetitions", "out")),
                        String.join(" ", args));
        assertThat(runs)
                .extracting(JobMeasurement::workload)
                .containsExactly(SqlYsbComparison.SQL, SqlYsbComparison.DATASTREAM);
        // 20 s of event time: two windows of each of the 100 campaigns.
        assertThat(runs).allSatisfy(m -> assertThat(m.result().recordsOut()).isEqualTo(200));
        assertThat(Files.readString(out.resolve(SqlYsbComparison.BASENAME + ".md")))
                .contains("| 2 | ")
                .contains("WATERMARK FOR rowtime AS rowtime - INTERVAL '1' SECOND");
    }

    @Test
    void sqlCountRunsInPushPullAndKafkaMode() throws Exception {
        String[] args = {
            "--records",
            "200000",
            "--parallelism",
            "1",
            "--repetitions",
            "1",
            "--out",
            out.toString()
        };
        List<JobMeasurement> runs =
                SqlCountComparison.run(
                        new Flags(args, Set.of("records", "parallelism", "repetitions", "out")),
                        String.join(" ", args));
        assertThat(runs)
                .extracting(JobMeasurement::mode)
                .containsExactly(SourceMode.PULL, SourceMode.PUSH, SourceMode.KAFKA);
        assertThat(runs).allSatisfy(m -> assertThat(m.records()).isEqualTo(200_000));
        assertThat(Files.readString(out.resolve(SqlCountComparison.BASENAME + ".md")))
                .contains("'connector' = 'kafka'")
                .contains("| 1 | ");
    }
}
