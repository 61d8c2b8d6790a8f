package io.nearstream.benchmarks.sink;

import io.nearstream.benchmarks.sink.SinkRun.TxnLatency;
import io.nearstream.benchmarks.sink.SinkRun.Visibility;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.ToDoubleFunction;
import java.util.stream.Collectors;
import javax.annotation.Nullable;

/**
 * The files of a {@link SinkThroughputBenchmark} run: {@code sink-throughput.csv} (one row a run,
 * rewritten after every run so a failure later keeps what was measured), {@code
 * sink-throughput-txns.csv} (every timed exactly-once transaction) and {@code sink-throughput.md}
 * (medians over the repetitions, the ratios and the spec's targets, every run).
 */
final class SinkResults {

    static final double TARGET_EO_OVER_ALO = 0.8;
    static final double TARGET_NEARSTREAM_OVER_KAFKA = 3.0;
    static final double TARGET_P99_MS = 50.0;

    private final SinkBenchmarkOptions options;
    private final String command;
    private final Machine machine;
    private final List<SinkRun> runs = new ArrayList<>();
    @Nullable private String kafkaVersion;
    private double loadAfter = Double.NaN;

    SinkResults(SinkBenchmarkOptions options, String command, Machine machine) {
        this.options = options;
        this.command = command;
        this.machine = machine;
    }

    void setVersions(@Nullable String kafkaVersion) {
        this.kafkaVersion = kafkaVersion;
    }

    void add(SinkRun run) throws IOException {
        runs.add(run);
        Files.writeString(
                options.out().resolve(SinkThroughputBenchmark.BASENAME + ".csv"),
                csv(),
                StandardCharsets.UTF_8);
    }

    List<SinkRun> runs() {
        return List.copyOf(runs);
    }

    void write() throws IOException {
        loadAfter = Machine.loadAverage();
        Path dir = options.out();
        String base = SinkThroughputBenchmark.BASENAME;
        Files.writeString(dir.resolve(base + ".csv"), csv(), StandardCharsets.UTF_8);
        Files.writeString(dir.resolve(base + "-txns.csv"), txnCsv(), StandardCharsets.UTF_8);
        Files.writeString(dir.resolve(base + ".md"), markdown(), StandardCharsets.UTF_8);
        System.out.println("wrote " + dir.resolve(base + ".{csv,md}") + ", " + base + "-txns.csv");
    }

    /** One line for the console. */
    static String summary(SinkRun r) {
        String s =
                String.format(
                        Locale.ROOT,
                        "%s rep %d: %,d records in %.2f s = %,.0f records/s; CPU s/M job %.3f,"
                                + " broker %.3f, total %.3f; %d checkpoints (p50 %.0f ms);"
                                + " broker took %,d of the %,d counted by the window's end%s",
                        r.kind().label(),
                        r.repetition(),
                        r.records(),
                        r.seconds(),
                        r.recordsPerSecond(),
                        r.jobCpuPerMillion(),
                        r.brokerCpuPerMillion(),
                        r.totalCpuPerMillion(),
                        r.checkpoints(),
                        r.checkpointP50Ms(),
                        r.brokerRecords(),
                        r.recordsAtWindowEnd(),
                        r.delivered() ? "" : " (MISSING RECORDS)");
        Visibility v = r.visibility();
        if (v != null) {
            s +=
                    String.format(
                            Locale.ROOT,
                            "; %d transactions timed (%d skipped, %d visible before commit):"
                                    + " commit→visible p50 %.1f p99 %.1f ms, last ack→visible p50"
                                    + " %.1f p99 %.1f ms, commit call p50 %.1f p99 %.1f ms",
                            v.figures());
        }
        return s;
    }

    String csv() {
        StringBuilder b =
                new StringBuilder(
                        "run,repetition,sink,seconds,records,records_per_s,job_cpu_s,broker_cpu_s,"
                                + "idle_broker_cpu_s,job_cpu_s_per_m,broker_cpu_s_per_m,"
                                + "total_cpu_s_per_m,records_at_window_end,records_at_end,"
                                + "broker_records,checkpoints,checkpoint_p50_ms,txns_timed,"
                                + "txns_unobserved,txns_visible_before_commit,"
                                + "commit_to_visible_p50_ms,commit_to_visible_p99_ms,"
                                + "ack_to_visible_p50_ms,ack_to_visible_p99_ms,"
                                + "commit_call_p50_ms,commit_call_p99_ms\n");
        int n = 0;
        for (SinkRun r : runs) {
            Visibility v = r.visibility();
            b.append(
                    String.format(
                            Locale.ROOT,
                            "%d,%d,%s,%.3f,%d,%.1f,%.3f,%.3f,%.3f,%.4f,%.4f,%.4f,%d,%d,%d,%d,%.1f,",
                            ++n,
                            r.repetition(),
                            r.kind().label(),
                            r.seconds(),
                            r.records(),
                            r.recordsPerSecond(),
                            r.jobCpuSeconds(),
                            r.brokerCpuSeconds(),
                            r.idleBrokerCpuSeconds(),
                            r.jobCpuPerMillion(),
                            r.brokerCpuPerMillion(),
                            r.totalCpuPerMillion(),
                            r.recordsAtWindowEnd(),
                            r.recordsAtEnd(),
                            r.brokerRecords(),
                            r.checkpoints(),
                            r.checkpointP50Ms()));
            if (v == null) {
                b.append(",,,,,,,,\n");
            } else {
                b.append(
                        String.format(
                                Locale.ROOT,
                                "%d,%d,%d,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f%n",
                                v.figures()));
            }
        }
        return b.toString();
    }

    String txnCsv() {
        StringBuilder b =
                new StringBuilder(
                        "run,repetition,checkpoint,records,commit_to_visible_ms,ack_to_visible_ms,"
                                + "commit_call_ms,flush_ms,prepare_ms\n");
        int n = 0;
        for (SinkRun r : runs) {
            n++;
            if (r.visibility() == null) {
                continue;
            }
            for (TxnLatency t : r.visibility().timed()) {
                b.append(
                        String.format(
                                Locale.ROOT,
                                "%d,%d,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f%n",
                                n,
                                r.repetition(),
                                t.checkpointId(),
                                t.records(),
                                t.commitToVisibleMs(),
                                t.ackToVisibleMs(),
                                t.commitCallMs(),
                                t.flushMs(),
                                t.prepareMs()));
            }
        }
        return b.toString();
    }

    String markdown() {
        StringBuilder b = new StringBuilder();
        b.append(
                "# Flink sinks: Nearstream vs Flink's KafkaSink, at least once and exactly once\n\n");
        b.append("Written by `SinkThroughputBenchmark` (started ")
                .append(machine.started())
                .append("); rerun from the repository root, after\n")
                .append(
                        "`mvn -B -pl benchmarks -am package -DskipTests -DskipSanitizers`, with:\n\n```sh\n")
                .append(command)
                .append("\n```\n\n");
        b.append(
                String.format(
                        Locale.ROOT,
                        "Machine: %s. Load average %.2f before, %.2f after.%n%n",
                        machine.line(),
                        machine.loadBefore(),
                        loadAfter));
        b.append(setting()).append("\n\n");
        appendMedians(b);
        appendTargets(b);
        appendLatency(b);
        appendRuns(b);
        return b.toString();
    }

    private String setting() {
        String order =
                options.sinks().stream().map(SinkKind::label).collect(Collectors.joining(", "));
        return String.format(
                Locale.ROOT,
                "Each job: `DataGeneratorSource` (no rate limit; record i is %d bytes carrying i) →"
                        + " a counting map → the sink, chained, parallelism %d, object reuse,"
                        + " checkpoints every %d ms (exactly-once checkpointing mode for every"
                        + " sink), no restarts. A run waits for the first record, lets the job run"
                        + " %d s, measures %d s, waits for one more checkpoint, cancels the job and"
                        + " checks that the broker took in at least the records counted by the"
                        + " window's end (Nearstream at least once: its append counter; exactly"
                        + " once: the records of the transactions whose commit it acknowledged;"
                        + " Kafka: the topic's end offsets, under exactly once a weaker check, as"
                        + " they also count the aborted last transaction and the commit markers)."
                        + " %d repetitions, each running %s in that order; every run"
                        + " writes a new stream or topic (deleted after it). Nearstream: nearstreamd"
                        + " --workers %d, %d streamlets, durability %s (files in a temporary"
                        + " directory), retention %d MiB per streamlet; the sink's defaults but"
                        + " chunks of %d B and linger %d ms; exactly once with transactional id"
                        + " prefix `bench` (one transaction per checkpoint). Kafka%s: one KRaft node"
                        + " (its own JVM, 1 GiB heap, data in a temporary directory), topic of %d"
                        + " partitions, retention.bytes %d MiB, segment.bytes 64 MiB; KafkaSink"
                        + " with batch.size %d, linger.ms %d, acks=all, no compression, the"
                        + " producer's other defaults (idempotence on); exactly once with"
                        + " transaction.timeout.ms %d and a transactional id prefix per run.%n%n"
                        + "records/s = records handed to the sink in the window / window. CPU s/M ="
                        + " CPU seconds per million of those records: job = this JVM (MiniCluster,"
                        + " the job, the benchmark's idle threads and, for Nearstream exactly once,"
                        + " the visibility reader: two fetches per checkpoint), broker = the sink's"
                        + " broker process (nearstreamd or the Kafka JVM, /proc), total = both. The"
                        + " other broker idles meanwhile; its CPU is in the CSV, not in the totals.",
                options.recordBytes(),
                options.parallelism(),
                options.checkpointMs(),
                options.warmupSeconds(),
                options.measureSeconds(),
                options.repetitions(),
                order,
                options.workers(),
                options.streamlets(),
                options.durability().name().toLowerCase(Locale.ROOT),
                options.retentionMb(),
                options.batchBytes(),
                options.lingerMs(),
                kafkaVersion == null ? "" : " " + kafkaVersion,
                options.streamlets(),
                options.retentionMb(),
                options.batchBytes(),
                options.lingerMs(),
                options.kafkaTransactionTimeoutMs());
    }

    private void appendMedians(StringBuilder b) {
        b.append("## Medians over the repetitions\n\n");
        b.append(
                "| sink | runs | records/s | min – max | job CPU s/M | broker CPU s/M |"
                        + " total CPU s/M | checkpoint p50 (ms) | broker took every record |\n");
        b.append("|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
        for (SinkKind k : options.sinks()) {
            List<SinkRun> of = of(k);
            if (of.isEmpty()) {
                continue;
            }
            double[] rates = of.stream().mapToDouble(SinkRun::recordsPerSecond).sorted().toArray();
            b.append(
                    String.format(
                            Locale.ROOT,
                            "| %s | %d | %s | %s – %s | %.3f | %.3f | %.3f | %.0f | %s |%n",
                            k.label(),
                            of.size(),
                            rate(median(of, SinkRun::recordsPerSecond)),
                            rate(rates[0]),
                            rate(rates[rates.length - 1]),
                            median(of, SinkRun::jobCpuPerMillion),
                            median(of, SinkRun::brokerCpuPerMillion),
                            median(of, SinkRun::totalCpuPerMillion),
                            median(of, SinkRun::checkpointP50Ms),
                            k == SinkKind.DISCARD
                                    ? "–"
                                    : of.stream().allMatch(SinkRun::delivered) ? "yes" : "NO"));
        }
        b.append("\n");
    }

    private void appendTargets(StringBuilder b) {
        b.append("## Ratios and the spec's targets\n\n");
        b.append("| comparison | value | target | |\n|---|---:|---|---|\n");
        ratioRow(
                b,
                "Nearstream exactly once / at least once, records/s",
                SinkKind.NEARSTREAM_EO,
                SinkKind.NEARSTREAM_ALO,
                SinkRun::recordsPerSecond,
                "≥ " + TARGET_EO_OVER_ALO,
                r -> r >= TARGET_EO_OVER_ALO);
        ratioRow(
                b,
                "Kafka exactly once / at least once, records/s (for comparison)",
                SinkKind.KAFKA_EO,
                SinkKind.KAFKA_ALO,
                SinkRun::recordsPerSecond,
                "–",
                null);
        for (SinkKind ns : List.of(SinkKind.NEARSTREAM_ALO, SinkKind.NEARSTREAM_EO)) {
            String g = ns == SinkKind.NEARSTREAM_ALO ? "at least once" : "exactly once";
            ratioRow(
                    b,
                    "Nearstream / Kafka records/s, " + g,
                    ns,
                    ns.counterpart(),
                    SinkRun::recordsPerSecond,
                    "≥ " + TARGET_NEARSTREAM_OVER_KAFKA,
                    r -> r >= TARGET_NEARSTREAM_OVER_KAFKA);
            ratioRow(
                    b,
                    "Kafka / Nearstream total CPU s per M records, " + g,
                    ns.counterpart(),
                    ns,
                    SinkRun::totalCpuPerMillion,
                    "> 1 (Nearstream uses fewer)",
                    r -> r > 1);
            ratioRow(
                    b,
                    "Kafka / Nearstream broker CPU s per M records, " + g,
                    ns.counterpart(),
                    ns,
                    SinkRun::brokerCpuPerMillion,
                    "–",
                    null);
        }
        List<SinkRun> eo = of(SinkKind.NEARSTREAM_EO);
        if (!eo.isEmpty()) {
            double p99 = SinkRun.percentile(pooled(eo, Visibility::commitToVisibleMs), 99);
            double ackP99 = SinkRun.percentile(pooled(eo, Visibility::ackToVisibleMs), 99);
            b.append(
                    String.format(
                            Locale.ROOT,
                            "| Nearstream exactly once, p99 commit call began → visible (all"
                                    + " runs) | %.1f ms | < %.0f ms | %s |%n",
                            p99,
                            TARGET_P99_MS,
                            p99 < TARGET_P99_MS ? "met" : "missed"));
            b.append(
                    String.format(
                            Locale.ROOT,
                            "| Nearstream exactly once, p99 JobManager's last ack → visible (all"
                                    + " runs) | %.1f ms | < %.0f ms | %s |%n",
                            ackP99,
                            TARGET_P99_MS,
                            ackP99 < TARGET_P99_MS ? "met" : "missed"));
        }
        b.append("\nRatios are of the medians above.\n\n");
    }

    private void ratioRow(
            StringBuilder b,
            String what,
            SinkKind numerator,
            SinkKind denominator,
            ToDoubleFunction<SinkRun> f,
            String target,
            @Nullable java.util.function.DoublePredicate met) {
        if (of(numerator).isEmpty() || of(denominator).isEmpty()) {
            return;
        }
        double r = median(of(numerator), f) / median(of(denominator), f);
        b.append(
                String.format(
                        Locale.ROOT,
                        "| %s | %.2f | %s | %s |%n",
                        what,
                        r,
                        target,
                        met == null ? "" : met.test(r) ? "met" : "missed"));
    }

    private void appendLatency(StringBuilder b) {
        List<SinkRun> eo = of(SinkKind.NEARSTREAM_EO);
        if (eo.isEmpty()) {
            return;
        }
        int unobserved = eo.stream().mapToInt(r -> r.visibility().unobserved()).sum();
        int early = eo.stream().mapToInt(r -> r.visibility().visibleBeforeCommit()).sum();
        b.append("## Nearstream exactly once: checkpoint completion → visible to readers\n\n");
        b.append(
                "Every transaction whose commit began in a measurement window, all runs together"
                        + " (`sink-throughput-txns.csv` has each). Visible = a reader that"
                        + " long-polls streamlet 0 got the transaction's first chunk there (one"
                        + " chunk per fetch, then it continues at the tail, so it costs two fetches"
                        + " per transaction). The committer's `commit` call begins when Flink tells"
                        + " the committer operator that the checkpoint completed; the JobManager's"
                        + " last acknowledgement of the checkpoint comes just before it completes,"
                        + " so that column also holds the finalisation and Flink's notification.\n\n");
        b.append("| from | transactions | p50 (ms) | p99 (ms) | max (ms) |\n");
        b.append("|---|---:|---:|---:|---:|\n");
        latencyRow(b, "committer's `commit` call began", pooled(eo, Visibility::commitToVisibleMs));
        latencyRow(b, "JobManager's last acknowledgement", pooled(eo, Visibility::ackToVisibleMs));
        latencyRow(
                b,
                "(the `commit` call itself: TxnCommit round trip)",
                pooled(eo, Visibility::commitCallMs));
        latencyRow(
                b, "(at the barrier, before: the writer's flush)", pooled(eo, Visibility::flushMs));
        latencyRow(
                b,
                "(at the barrier, before: `prepareCommit`, TxnPrepare)",
                pooled(eo, Visibility::prepareMs));
        b.append(
                String.format(
                        Locale.ROOT,
                        "%nTransactions committed in the windows but skipped by the reader: %d;"
                                + " seen before their commit began: %d.%n%n",
                        unobserved,
                        early));
    }

    private static void latencyRow(StringBuilder b, String what, List<Double> ms) {
        long n = ms.stream().filter(d -> !Double.isNaN(d)).count();
        b.append(
                String.format(
                        Locale.ROOT,
                        "| %s | %d | %.1f | %.1f | %.1f |%n",
                        what,
                        n,
                        SinkRun.percentile(ms, 50),
                        SinkRun.percentile(ms, 99),
                        SinkRun.percentile(ms, 100)));
    }

    private void appendRuns(StringBuilder b) {
        b.append("## Every run, in the order run\n\n");
        b.append(
                "| # | sink | rep | window (s) | records | records/s | job CPU s | broker CPU s |"
                        + " total CPU s/M | checkpoints | broker took / counted by window end |"
                        + " commit→visible p50 / p99 (ms) |\n");
        b.append("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n");
        int n = 0;
        for (SinkRun r : runs) {
            Visibility v = r.visibility();
            b.append(
                    String.format(
                            Locale.ROOT,
                            "| %d | %s | %d | %.2f | %,d | %s | %.2f | %.2f | %.3f | %d | %s | %s |%n",
                            ++n,
                            r.kind().label(),
                            r.repetition(),
                            r.seconds(),
                            r.records(),
                            rate(r.recordsPerSecond()),
                            r.jobCpuSeconds(),
                            r.brokerCpuSeconds(),
                            r.totalCpuPerMillion(),
                            r.checkpoints(),
                            r.brokerRecords() < 0
                                    ? "–"
                                    : String.format(
                                            Locale.ROOT,
                                            "%,d / %,d",
                                            r.brokerRecords(),
                                            r.recordsAtWindowEnd()),
                            v == null
                                    ? ""
                                    : String.format(
                                            Locale.ROOT,
                                            "%.1f / %.1f (%d)",
                                            SinkRun.percentile(v.commitToVisibleMs(), 50),
                                            SinkRun.percentile(v.commitToVisibleMs(), 99),
                                            v.timed().size())));
        }
        b.append("\n");
    }

    private List<SinkRun> of(SinkKind kind) {
        return runs.stream().filter(r -> r.kind() == kind).toList();
    }

    private static List<Double> pooled(
            List<SinkRun> runs, java.util.function.Function<Visibility, List<Double>> f) {
        List<Double> all = new ArrayList<>();
        for (SinkRun r : runs) {
            if (r.visibility() != null) {
                all.addAll(f.apply(r.visibility()));
            }
        }
        return all;
    }

    static double median(List<SinkRun> runs, ToDoubleFunction<SinkRun> f) {
        double[] v = runs.stream().mapToDouble(f).sorted().toArray();
        if (v.length == 0) {
            return Double.NaN;
        }
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    private static String rate(double perSecond) {
        return String.format(Locale.ROOT, "%.3f M", perSecond / 1e6);
    }
}
