package io.nearstream.benchmarks.sql;

import io.nearstream.benchmarks.PreloadedStream;
import io.nearstream.benchmarks.jobs.ComparisonReports;
import io.nearstream.benchmarks.jobs.CountJobComparison;
import io.nearstream.benchmarks.jobs.Flags;
import io.nearstream.benchmarks.jobs.JobMeasurement;
import io.nearstream.benchmarks.jobs.LocalFlinkCluster;
import io.nearstream.benchmarks.jobs.SourceMode;
import io.nearstream.benchmarks.kafka.KafkaBroker;
import io.nearstream.benchmarks.kafka.KafkaPreload;
import io.nearstream.process.BrokerProcess;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.ToDoubleFunction;
import javax.annotation.Nullable;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;

/**
 * {@code SELECT COUNT(*)} in Flink SQL, batch mode, over a bounded pre-loaded stream: the {@code
 * nearstream} table connector in push and in pull mode against Flink's {@code kafka} table
 * connector ({@code flink-connector-kafka}) reading the same records from a local Kafka node, side
 * by side in one run (the target: SQL over push at least 3× SQL over Kafka's records/s). Starts
 * {@code nearstreamd} ({@code --workers W}) and pre-loads N records of {@code --record-bytes} into
 * {@code --streamlets} streamlets (as {@code CountJobComparison} does), loads the same records into
 * a Kafka topic of as many partitions, starts one MiniCluster, runs one untimed job per mode, then
 * for each parallelism R repetitions of every mode (the order reversed every other repetition).
 * Every job must count exactly N, or the run fails. Writes every run to {@code OUT/sql-count.csv}
 * and the medians with push/kafka and push/pull ratios to {@code OUT/sql-count.md}.
 *
 * <pre>{@code
 * java -Xmx2g --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.util=ALL-UNNAMED \
 *     --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
 *     -Dio.netty.tryReflectionSetAccessible=true \
 *     -cp benchmarks/target/benchmarks.jar:$(cat benchmarks/target/sql-classpath.txt) \
 *     io.nearstream.benchmarks.sql.SqlCountComparison --records 20000000 --out docs/results/sql
 * }</pre>
 *
 * <p>Flags (defaults): {@code --records} (20 000 000), {@code --workers} (2), {@code --streamlets}
 * (4), {@code --record-bytes} (100), {@code --chunk-bytes} (65536), {@code --parallelism} (1,2),
 * {@code --repetitions} (3), {@code --modes} (pull,push,kafka; push is required, the others are the
 * baselines), {@code --out} (target/sql-results).
 */
public final class SqlCountComparison {

    private static final Set<String> FLAGS =
            Set.of(
                    "records",
                    "workers",
                    "streamlets",
                    "record-bytes",
                    "chunk-bytes",
                    "parallelism",
                    "repetitions",
                    "modes",
                    "out");

    static final String BASENAME = "sql-count";
    static final String WORKLOAD = "sql-count";

    /** The query every mode runs. */
    static final String QUERY = "SELECT COUNT(*) FROM records";

    /** The target: SQL over push at least this many times SQL over Kafka's records/s. */
    static final double KAFKA_TARGET = 3.0;

    private static final String KAFKA_TOPIC = "bench";
    private static final String COUNT = "sqlCount";

    private SqlCountComparison() {}

    public static void main(String[] args) throws Exception {
        Flags flags;
        try {
            flags = new Flags(args, FLAGS);
            modes(flags.string("modes", "pull,push,kafka"));
        } catch (IllegalArgumentException e) {
            System.err.println("SqlCountComparison: " + e.getMessage());
            System.exit(2);
            return;
        }
        try {
            run(flags, String.join(" ", args));
        } catch (Exception e) {
            System.err.println("SqlCountComparison failed");
            e.printStackTrace();
            System.exit(1);
        }
        System.exit(0); // Netty and Flink leave non-daemon threads behind
    }

    /** The modes of {@code --modes}, each once; push is the one compared. */
    static List<SourceMode> modes(String list) {
        List<SourceMode> modes = new ArrayList<>();
        for (String name : list.split(",")) {
            SourceMode mode = SourceMode.parse(name.trim());
            if (!modes.contains(mode)) {
                modes.add(mode);
            }
        }
        if (!modes.contains(SourceMode.PUSH) || modes.size() < 2) {
            throw new IllegalArgumentException(
                    "--modes must name push and a baseline (pull, kafka), got " + list);
        }
        return modes;
    }

    static List<JobMeasurement> run(Flags flags, String commandLine) throws Exception {
        long records = flags.positiveLong("records", 20_000_000);
        if (records > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("--records is too large: " + records);
        }
        int workers = flags.positiveInt("workers", 2);
        int streamlets = flags.positiveInt("streamlets", 4);
        int recordBytes = flags.positiveInt("record-bytes", 100);
        int chunkBytes = flags.positiveInt("chunk-bytes", 64 * 1024);
        List<Integer> parallelisms = flags.positiveInts("parallelism", List.of(1, 2));
        int repetitions = flags.positiveInt("repetitions", 3);
        List<SourceMode> modes = modes(flags.string("modes", "pull,push,kafka"));
        Path out = Path.of(flags.string("out", "target/sql-results"));
        String started = Instant.now().toString();
        double loadBefore = ComparisonReports.loadAverage();

        List<JobMeasurement> runs = new ArrayList<>();
        KafkaBroker kafka = null;
        try (PreloadedStream stream =
                        PreloadedStream.start(
                                BrokerProcess.start(workers),
                                streamlets,
                                (int) records,
                                recordBytes,
                                chunkBytes);
                LocalFlinkCluster cluster =
                        LocalFlinkCluster.start(Collections.max(parallelisms))) {
            if (modes.contains(SourceMode.KAFKA)) {
                kafka = KafkaBroker.start();
                KafkaPreload.load(kafka, KAFKA_TOPIC, streamlets, records, recordBytes, chunkBytes);
            }
            for (SourceMode mode : modes) {
                JobMeasurement warm = runOne(mode, 1, records, stream, kafka, cluster);
                System.out.println("warm-up: " + warm.summary());
            }
            for (int p : parallelisms) {
                for (int r = 0; r < repetitions; r++) {
                    for (SourceMode mode : ComparisonReports.order(modes, r)) {
                        JobMeasurement m = runOne(mode, p, records, stream, kafka, cluster);
                        System.out.println(m.summary());
                        System.out.println(m.toJson());
                        runs.add(m);
                    }
                }
            }
        } finally {
            if (kafka != null) {
                kafka.close();
            }
        }
        String setting =
                String.format(
                        Locale.ROOT,
                        "%,d records of %d B in %d streamlets / partitions (%d B chunks and Kafka"
                                + " batch.size), nearstreamd --workers %d, %d repetitions;"
                                + " started %s, load average %.2f before and %.2f after",
                        records,
                        recordBytes,
                        streamlets,
                        chunkBytes,
                        workers,
                        repetitions,
                        started,
                        loadBefore,
                        ComparisonReports.loadAverage());
        ComparisonReports.write(
                out,
                BASENAME,
                CountJobComparison.csv(runs),
                markdown(runs, modes, parallelisms, setting, commandLine));
        return runs;
    }

    /** The source table of {@code mode}: every record's bytes, from the first to the tail. */
    static String sourceTable(SourceMode mode, String address, String streamOrTopic) {
        if (mode == SourceMode.KAFKA) {
            return TableDdl.kafka("records", "record BYTES", address, streamOrTopic)
                    .with("format", "raw")
                    .with("properties.group.id", "nearstream-bench-sql-count")
                    .with("scan.startup.mode", "earliest-offset")
                    .with("scan.bounded.mode", "latest-offset")
                    .toString();
        }
        return TableDdl.nearstream("records", "record BYTES", address, streamOrTopic)
                .with("format", "raw")
                .with("scan.read-mode", mode.label())
                .with("scan.bounded.mode", "latest")
                .toString();
    }

    private static JobMeasurement runOne(
            SourceMode mode,
            int p,
            long records,
            PreloadedStream stream,
            @Nullable KafkaBroker kafka,
            LocalFlinkCluster cluster)
            throws Exception {
        StreamExecutionEnvironment env = SqlJobs.environment(p, RuntimeExecutionMode.BATCH);
        StreamTableEnvironment tables = SqlJobs.tables(env, RuntimeExecutionMode.BATCH);
        tables.executeSql(
                mode == SourceMode.KAFKA
                        ? sourceTable(mode, kafka.bootstrapServers(), KAFKA_TOPIC)
                        : sourceTable(mode, stream.broker().address(), stream.stream()));
        tables.toDataStream(tables.sqlQuery(QUERY))
                .map(new CountToAccumulator())
                .returns(Types.LONG)
                .name("count to accumulator")
                .sinkTo(new DiscardingSink<>())
                .name("discard");
        JobGraph job = SqlJobs.jobGraph(env, WORKLOAD + "-" + mode.label() + "-p" + p);
        MeasuredJob.Figures figures =
                MeasuredJob.run(
                        job,
                        cluster,
                        mode == SourceMode.KAFKA
                                ? kafka::cpuSeconds
                                : MeasuredJob.nearstream(stream.client()));
        Object counted = figures.execution().getAccumulatorResult(COUNT);
        if (counted == null || ((Number) counted).longValue() != records) {
            throw new IllegalStateException(
                    String.format(
                            "%s p=%d: COUNT(*) = %s, the stream holds %,d",
                            mode, p, counted, records));
        }
        return figures.measurement(WORKLOAD, mode, p, records, 1);
    }

    /** The query's one row, its count added to the job's accumulator for the runner to check. */
    static final class CountToAccumulator extends RichMapFunction<Row, Long> {
        private static final long serialVersionUID = 1L;
        private transient LongCounter count;

        @Override
        public void open(OpenContext context) {
            count = new LongCounter();
            getRuntimeContext().addAccumulator(COUNT, count);
        }

        @Override
        public Long map(Row row) {
            long n = (Long) row.getField(0);
            count.add(n);
            return n;
        }
    }

    static String markdown(
            List<JobMeasurement> runs,
            List<SourceMode> modes,
            List<Integer> parallelisms,
            String setting,
            String command) {
        StringBuilder b = new StringBuilder("# SQL count: nearstream push vs pull vs Kafka\n\n");
        b.append("Written by `SqlCountComparison`; rerun with (from the repository root, after\n`")
                .append(Reports.BUILD)
                .append("`):\n\n```sh\n")
                .append(Reports.JAVA)
                .append(" \\\n    io.nearstream.benchmarks.sql.SqlCountComparison ")
                .append(command)
                .append("\n```\n\n");
        b.append("Every job is `")
                .append(QUERY)
                .append(
                        "` in batch mode (a local count chained to the source, one final count),"
                                + " its result checked against the records loaded; the table is,"
                                + " per mode:\n\n```sql\n");
        for (SourceMode mode : modes) {
            b.append("-- ").append(mode.label()).append("\n");
            b.append(
                            sourceTable(
                                    mode,
                                    "HOST:PORT",
                                    mode == SourceMode.KAFKA
                                            ? KAFKA_TOPIC
                                            : PreloadedStream.STREAM))
                    .append(";\n");
        }
        b.append("```\n\n");
        b.append(
                "records/s = records / (first task RUNNING → last task FINISHED, the"
                        + " JobManager's task timestamps). CPU s/M = CPU seconds per million"
                        + " records: job = this JVM's process CPU over the job, broker ="
                        + " nearstreamd's (Stats RPC) or the Kafka node's process CPU; total ="
                        + " both. Every run: `"
                        + BASENAME
                        + ".csv`. Medians over the repetitions.\n\n");
        b.append(
                "| p | kafka records/s | pull records/s | push records/s | push/kafka | push/pull |"
                        + " target (push ≥ "
                        + (int) KAFKA_TARGET
                        + "× kafka) |\n");
        b.append("|---:|---:|---:|---:|---:|---:|---|\n");
        for (int p : parallelisms) {
            double kafka = rate(runs, SourceMode.KAFKA, p);
            double pull = rate(runs, SourceMode.PULL, p);
            double push = rate(runs, SourceMode.PUSH, p);
            b.append(
                    String.format(
                            Locale.ROOT,
                            "| %d | %s | %s | %s | %s | %s | %s |%n",
                            p,
                            millions(kafka),
                            millions(pull),
                            millions(push),
                            ratio(push, kafka),
                            ratio(push, pull),
                            Double.isNaN(kafka)
                                    ? "not run"
                                    : push >= KAFKA_TARGET * kafka ? "met" : "missed"));
        }
        b.append("\n| p | mode | job CPU s/M | broker CPU s/M | total CPU s/M | job wall s |\n");
        b.append("|---:|---|---:|---:|---:|---:|\n");
        for (int p : parallelisms) {
            for (SourceMode mode : modes) {
                b.append(
                        String.format(
                                Locale.ROOT,
                                "| %d | %s | %.3f | %.3f | %.3f | %.2f |%n",
                                p,
                                mode.label(),
                                median(runs, mode, p, m -> m.perMillion(m.jobCpuSeconds())),
                                median(runs, mode, p, m -> m.perMillion(m.brokerCpuSeconds())),
                                median(runs, mode, p, Reports::totalCpuPerMillion),
                                median(runs, mode, p, JobMeasurement::jobSeconds)));
            }
        }
        b.append("\n").append(setting).append(".\n");
        return b.toString();
    }

    private static double rate(List<JobMeasurement> runs, SourceMode mode, int p) {
        return median(runs, mode, p, JobMeasurement::recordsPerSecond);
    }

    private static double median(
            List<JobMeasurement> runs, SourceMode mode, int p, ToDoubleFunction<JobMeasurement> f) {
        return ComparisonReports.median(runs, m -> m.mode() == mode && m.parallelism() == p, f);
    }

    private static String millions(double v) {
        return Double.isNaN(v) ? "—" : String.format(Locale.ROOT, "%.2f M", v / 1e6);
    }

    private static String ratio(double a, double b) {
        return Double.isNaN(a) || Double.isNaN(b) ? "—" : String.format(Locale.ROOT, "%.2f", a / b);
    }
}
