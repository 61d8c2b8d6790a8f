package io.nearstream.benchmarks.sink;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.benchmarks.sink.SinkRun.TxnLatency;
import io.nearstream.benchmarks.sink.SinkRun.Visibility;
import io.nearstream.benchmarks.sink.SinkRunProbe.TxnTrace;
import io.nearstream.benchmarks.sink.SinkThroughputBenchmark.Snapshot;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The benchmark's arithmetic: percentiles, matching transactions to what the reader saw, pages. */
class SinkResultsTest {

    private static final long MS = 1_000_000L;

    @Test
    void percentilesAreNearestRank() {
        List<Double> v = List.of(5.0, 1.0, 4.0, 2.0, 3.0, Double.NaN);
        assertThat(SinkRun.percentile(v, 50)).isEqualTo(3.0);
        assertThat(SinkRun.percentile(v, 99)).isEqualTo(5.0);
        assertThat(SinkRun.percentile(v, 0)).isEqualTo(1.0);
        assertThat(SinkRun.percentile(List.of(), 50)).isNaN();
    }

    @Test
    void eachTransactionIsVisibleAtItsEarliestObservation() {
        Snapshot s0 = new Snapshot(1_000 * MS, 50_000, 0, 0, 0, 0);
        Snapshot s1 = new Snapshot(10_000 * MS, 59_000, 0, 0, 0, 0);
        List<TxnTrace> txns = new ArrayList<>();
        txns.add(txn(0, 99, 1, 500 * MS, 510 * MS)); // committed before the window: left out
        txns.add(txn(100, 199, 2, 2_000 * MS, 2_010 * MS));
        txns.add(txn(200, 299, 3, 3_000 * MS, 3_012 * MS)); // the reader skipped it
        txns.add(txn(300, 399, 4, 4_000 * MS, 4_005 * MS)); // seen before its commit began
        List<long[]> seen =
                List.of(
                        new long[] {101, 2_009 * MS},
                        new long[] {150, 2_020 * MS},
                        new long[] {310, 3_999 * MS},
                        new long[] {2, 600 * MS});

        Visibility v = SinkThroughputBenchmark.visibility(txns, seen, s0, s1, Map.of());

        assertThat(v.unobserved()).isEqualTo(1);
        assertThat(v.visibleBeforeCommit()).isEqualTo(1);
        assertThat(v.timed()).hasSize(2);
        TxnLatency first = v.timed().get(0);
        assertThat(first.checkpointId()).isEqualTo(2);
        assertThat(first.records()).isEqualTo(100);
        assertThat(first.commitToVisibleMs()).isEqualTo(9.0);
        assertThat(first.commitCallMs()).isEqualTo(10.0);
        assertThat(first.ackToVisibleMs()).isNaN(); // no checkpoint statistics given
        assertThat(v.timed().get(1).commitToVisibleMs()).isEqualTo(-1.0);
    }

    @Test
    void pageHasTheRatiosAndTargets(@TempDir Path out) throws Exception {
        SinkBenchmarkOptions options =
                SinkBenchmarkOptions.parse(new String[] {"--out", out.toString()});
        SinkResults results =
                new SinkResults(
                        options,
                        "java -cp x Main",
                        new Machine("now", "cpu", 2, "1 GiB", "6", "17", 1.0));
        Visibility latency =
                new Visibility(List.of(new TxnLatency(3, 1000, 12.0, 15.0, 11.0, 2.0, 30.0)), 0, 0);
        results.add(run(SinkKind.NEARSTREAM_ALO, 1_000_000, 0.5, null));
        results.add(run(SinkKind.NEARSTREAM_EO, 900_000, 0.6, latency));
        results.add(run(SinkKind.KAFKA_ALO, 200_000, 2.0, null));
        results.add(run(SinkKind.KAFKA_EO, 400_000, 1.5, null));

        String md = results.markdown();

        assertThat(md)
                .contains(
                        "| Nearstream exactly once / at least once, records/s | 0.90 | ≥ 0.8 | met |")
                .contains("| Nearstream / Kafka records/s, at least once | 5.00 | ≥ 3.0 | met |")
                .contains("| Nearstream / Kafka records/s, exactly once | 2.25 | ≥ 3.0 | missed |")
                .contains("p99 commit call began → visible (all runs) | 12.0 ms | < 50 ms | met |")
                .contains("java -cp x Main");
        assertThat(results.csv().lines()).hasSize(5);
        assertThat(results.txnCsv().lines()).hasSize(2);
    }

    private static SinkRun run(SinkKind kind, long records, double cpuSeconds, Visibility v) {
        return new SinkRun(
                kind,
                1,
                1.0,
                records,
                cpuSeconds / 2,
                cpuSeconds / 2,
                0.01,
                records,
                records,
                records,
                1,
                100,
                v);
    }

    private static TxnTrace txn(long first, long last, long checkpoint, long start, long end) {
        TxnTrace t = new TxnTrace();
        t.firstIndex = first;
        t.lastIndex = last;
        t.checkpointId = checkpoint;
        t.commitStartNanos = start;
        t.commitEndNanos = end;
        return t;
    }
}
