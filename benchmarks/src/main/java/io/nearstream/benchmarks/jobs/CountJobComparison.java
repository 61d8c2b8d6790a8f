package io.nearstream.benchmarks.jobs;

import io.nearstream.benchmarks.PreloadedStream;
import io.nearstream.benchmarks.kafka.KafkaBroker;
import io.nearstream.benchmarks.kafka.KafkaPreload;
import io.nearstream.process.BrokerProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.ToDoubleFunction;
import javax.annotation.Nullable;

/**
 * The iterate-and-count job in pull and in push mode, side by side in one run (the target: push at
 * least 2× pull's records/s and fewer broker CPU seconds per million records, at source parallelism
 * 1 and 2): starts {@code nearstreamd} with {@code --workers W}, pre-loads N records, starts one
 * MiniCluster, runs one untimed pull and push job to warm the JVM, then for each parallelism R
 * repetitions of a pull and a push job (the order alternates between repetitions) over the whole
 * stream. Writes every run to {@code OUT/count-job-pull-vs-push.csv} and the medians with push/pull
 * ratios to {@code OUT/count-job-pull-vs-push.md}.
 *
 * <pre>{@code
 * java -Xmx2g --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.util=ALL-UNNAMED \
 *     --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
 *     -Dio.netty.tryReflectionSetAccessible=true \
 *     -cp benchmarks/target/benchmarks.jar io.nearstream.benchmarks.jobs.CountJobComparison \
 *     --records 20000000 --workers 2 --parallelism 1,2 --repetitions 3 --out docs/results
 * }</pre>
 *
 * <p>Flags (defaults): {@code --records} (10 000 000), {@code --workers} (2), {@code --streamlets}
 * (4), {@code --record-bytes} (100), {@code --chunk-bytes} (65536), {@code --parallelism} (1,2),
 * {@code --repetitions} (3), {@code --workload} (count; {@code filter} also works), {@code
 * --fetch-bytes}, {@code --push-slots}, {@code --push-slot-bytes} (as {@link JobRunner}), {@code
 * --modes} (pull,push; add {@code kafka} to also run the job on Flink's Kafka source against a
 * local Kafka node holding the same records, against the Kafka target below), {@code --out}
 * (target/job-results). Every job must read exactly N records, or the run fails.
 */
public final class CountJobComparison {

    private static final Set<String> FLAGS =
            Set.of(
                    "records",
                    "workers",
                    "streamlets",
                    "record-bytes",
                    "chunk-bytes",
                    "parallelism",
                    "repetitions",
                    "workload",
                    "fetch-bytes",
                    "push-slots",
                    "push-slot-bytes",
                    "modes",
                    "out");

    /** The Kafka topic the Kafka mode reads (the same records as the Nearstream stream). */
    static final String KAFKA_TOPIC = "bench";

    static final String BASENAME = "count-job-pull-vs-push";

    /** The JVM command the results page quotes (the options Flink, Netty and Arrow need). */
    static final String JAVA =
            "java -Xmx2g --add-opens=java.base/java.lang=ALL-UNNAMED"
                    + " --add-opens=java.base/java.util=ALL-UNNAMED"
                    + " --add-opens=java.base/java.nio=ALL-UNNAMED"
                    + " --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \\\n"
                    + "    -Dio.netty.tryReflectionSetAccessible=true"
                    + " -cp benchmarks/target/benchmarks.jar";

    private CountJobComparison() {}

    public static void main(String[] args) throws Exception {
        Flags flags;
        try {
            flags = new Flags(args, FLAGS);
            Workload.named(flags.string("workload", CountWorkload.NAME));
            modes(flags.string("modes", "pull,push"));
        } catch (IllegalArgumentException e) {
            System.err.println("CountJobComparison: " + e.getMessage());
            System.exit(2);
            return;
        }
        try {
            run(flags, String.join(" ", args));
        } catch (Exception e) {
            System.err.println("CountJobComparison failed");
            e.printStackTrace();
            System.exit(1);
        }
        System.exit(0); // Netty and Flink leave non-daemon threads behind
    }

    static List<JobMeasurement> run(Flags flags, String commandLine) throws Exception {
        long records = flags.positiveLong("records", 10_000_000);
        if (records > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("--records is too large: " + records);
        }
        int workers = flags.positiveInt("workers", 2);
        List<Integer> parallelisms = flags.positiveInts("parallelism", List.of(1, 2));
        int repetitions = flags.positiveInt("repetitions", 3);
        Path out = Path.of(flags.string("out", "target/job-results"));
        Files.createDirectories(out);
        String started = Instant.now().toString();
        double loadBefore = ComparisonReports.loadAverage();

        List<SourceMode> modes = modes(flags.string("modes", "pull,push"));
        int streamlets = flags.positiveInt("streamlets", 4);
        int recordBytes = flags.positiveInt("record-bytes", 100);
        int chunkBytes = flags.positiveInt("chunk-bytes", 64 * 1024);
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
            JobOptions base =
                    new JobOptions(
                            flags.string("workload", CountWorkload.NAME),
                            SourceMode.PULL,
                            stream.broker().address(),
                            stream.stream(),
                            1,
                            records,
                            flags.positiveInt("fetch-bytes", JobOptions.DEFAULT_FETCH_BYTES),
                            flags.positiveInt("push-slots", JobOptions.DEFAULT_PUSH_SLOTS),
                            flags.positiveInt(
                                    "push-slot-bytes", JobOptions.DEFAULT_PUSH_SLOT_BYTES),
                            FilterWorkload.DEFAULT_PATTERN);
            if (modes.contains(SourceMode.KAFKA)) {
                kafka = KafkaBroker.start();
                KafkaPreload.load(kafka, KAFKA_TOPIC, streamlets, records, recordBytes, chunkBytes);
            }
            for (SourceMode mode : modes) {
                JobMeasurement warm = runOne(base.withMode(mode), cluster, stream, kafka);
                System.out.println("warm-up: " + warm.summary());
            }
            for (int p : parallelisms) {
                for (int r = 0; r < repetitions; r++) {
                    for (SourceMode mode : ComparisonReports.order(modes, r)) {
                        JobMeasurement m =
                                runOne(
                                        base.withMode(mode).withParallelism(p),
                                        cluster,
                                        stream,
                                        kafka);
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
                        "%,d records of %d B in %d streamlets (%d B chunks), nearstreamd --workers"
                                + " %d, %d repetitions; started %s, load average %.2f before and"
                                + " %.2f after",
                        records,
                        flags.positiveInt("record-bytes", 100),
                        flags.positiveInt("streamlets", 4),
                        flags.positiveInt("chunk-bytes", 64 * 1024),
                        workers,
                        repetitions,
                        started,
                        loadBefore,
                        ComparisonReports.loadAverage());
        ComparisonReports.write(
                out, BASENAME, csv(runs), markdown(runs, parallelisms, setting, commandLine));
        return runs;
    }

    /**
     * Runs one job; a Kafka-mode job reads the pre-loaded topic, and its broker CPU is the Kafka
     * node's process CPU over the job (it has no Stats RPC).
     */
    private static JobMeasurement runOne(
            JobOptions options,
            LocalFlinkCluster cluster,
            PreloadedStream stream,
            @Nullable KafkaBroker kafka)
            throws Exception {
        if (options.mode() != SourceMode.KAFKA) {
            return JobRunner.run(options, cluster, stream.client());
        }
        double before = kafka.cpuSeconds();
        JobMeasurement m =
                JobRunner.run(
                        options.withSource(kafka.bootstrapServers(), KAFKA_TOPIC), cluster, null);
        double brokerCpu = kafka.cpuSeconds() - before;
        return new JobMeasurement(
                m.workload(),
                m.mode(),
                m.parallelism(),
                m.result(),
                m.seconds(),
                m.jobSeconds(),
                m.jobCpuSeconds(),
                brokerCpu);
    }

    /** {@code pull,push[,kafka]}: pull and push always (the comparison this class is for). */
    static List<SourceMode> modes(String list) {
        List<SourceMode> modes = new ArrayList<>();
        for (String name : list.split(",")) {
            SourceMode mode = SourceMode.parse(name.trim());
            if (!modes.contains(mode)) {
                modes.add(mode);
            }
        }
        if (!modes.contains(SourceMode.PULL) || !modes.contains(SourceMode.PUSH)) {
            throw new IllegalArgumentException("--modes must name pull and push, got " + list);
        }
        return modes;
    }

    /** Every run as CSV, header first (also the SQL comparisons' layout). */
    public static String csv(List<JobMeasurement> runs) {
        StringBuilder b =
                new StringBuilder(
                        "workload,mode,parallelism,records,output,seconds,records_per_s,job_seconds,"
                                + "job_cpu_s,job_cpu_s_per_m,broker_cpu_s,broker_cpu_s_per_m\n");
        for (JobMeasurement m : runs) {
            b.append(
                    String.format(
                            Locale.ROOT,
                            "%s,%s,%d,%d,%d,%.4f,%.1f,%.4f,%.4f,%.4f,%.4f,%.4f%n",
                            m.workload(),
                            m.mode().label(),
                            m.parallelism(),
                            m.records(),
                            m.result().recordsOut(),
                            m.seconds(),
                            m.recordsPerSecond(),
                            m.jobSeconds(),
                            m.jobCpuSeconds(),
                            m.perMillion(m.jobCpuSeconds()),
                            m.brokerCpuSeconds(),
                            m.perMillion(m.brokerCpuSeconds())));
        }
        return b.toString();
    }

    static String markdown(
            List<JobMeasurement> runs, List<Integer> parallelisms, String setting, String command) {
        StringBuilder b = new StringBuilder();
        boolean withKafka = runs.stream().anyMatch(m -> m.mode() == SourceMode.KAFKA);
        b.append("# Count job: pull vs push")
                .append(withKafka ? " vs Flink's Kafka source" : "")
                .append("\n\n");
        b.append("Written by `CountJobComparison`; rerun with (from the repository root, after\n");
        b.append("`mvn -B -pl benchmarks -am package -DskipTests -DskipSanitizers`):\n\n");
        b.append("```sh\n")
                .append(JAVA)
                .append(" \\\n")
                .append("    io.nearstream.benchmarks.jobs.CountJobComparison ")
                .append(command)
                .append("\n```\n\n");
        b.append(
                "Each job reads the whole pre-loaded stream (source, chained flat-map that counts,"
                        + " discarding sink; object reuse on). records/s = records / (first record"
                        + " seen → last subtask done). CPU s/M = CPU seconds per million records:"
                        + " broker = its process CPU (Stats RPC) over the job, job = this JVM's"
                        + " process CPU over the job. Every run: `"
                        + BASENAME
                        + ".csv`. Medians over the repetitions; ratio = push / pull.\n\n");
        b.append(
                "| p | pull records/s | push records/s | push/pull | pull broker CPU s/M |"
                        + " push broker CPU s/M | push/pull | pull job CPU s/M | push job CPU s/M |"
                        + " target (push ≥ 2× pull, less broker CPU) |\n");
        b.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
        for (int p : parallelisms) {
            List<JobMeasurement> pull = select(runs, SourceMode.PULL, p);
            List<JobMeasurement> push = select(runs, SourceMode.PUSH, p);
            double pullRate = median(pull, JobMeasurement::recordsPerSecond);
            double pushRate = median(push, JobMeasurement::recordsPerSecond);
            double pullBroker = median(pull, m -> m.perMillion(m.brokerCpuSeconds()));
            double pushBroker = median(push, m -> m.perMillion(m.brokerCpuSeconds()));
            double pullJob = median(pull, m -> m.perMillion(m.jobCpuSeconds()));
            double pushJob = median(push, m -> m.perMillion(m.jobCpuSeconds()));
            boolean met = pushRate >= 2 * pullRate && pushBroker < pullBroker;
            b.append(
                    String.format(
                            Locale.ROOT,
                            "| %d | %.2f M | %.2f M | %.2f | %.3f | %.3f | %.2f | %.3f | %.3f | %s |%n",
                            p,
                            pullRate / 1e6,
                            pushRate / 1e6,
                            pushRate / pullRate,
                            pullBroker,
                            pushBroker,
                            pushBroker / pullBroker,
                            pullJob,
                            pushJob,
                            met ? "met" : "missed"));
        }
        if (withKafka) {
            appendKafkaTable(b, runs, parallelisms);
        }
        b.append("\n").append(setting).append(".\n\n");
        return b.toString();
    }

    /**
     * Push against Flink's Kafka source (the target: at least 5x the records/s and 5x fewer CPU
     * seconds per million records, the job's and the broker's together).
     */
    private static void appendKafkaTable(
            StringBuilder b, List<JobMeasurement> runs, List<Integer> parallelisms) {
        b.append(
                "\nPush vs Flink's Kafka source (`flink-connector-kafka`, a local Kafka KRaft node"
                        + " in its own JVM, the same records in a topic of as many partitions,"
                        + " batch.size = chunk size); total CPU = job + broker, the Kafka node's"
                        + " being its process CPU over the job:\n\n");
        b.append(
                "| p | kafka records/s | push records/s | push/kafka | kafka total CPU s/M |"
                        + " push total CPU s/M | kafka/push | kafka broker CPU s/M |"
                        + " target (≥ 5× records/s, ≥ 5× less CPU) |\n");
        b.append("|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
        for (int p : parallelisms) {
            List<JobMeasurement> kafka = select(runs, SourceMode.KAFKA, p);
            List<JobMeasurement> push = select(runs, SourceMode.PUSH, p);
            double kafkaRate = median(kafka, JobMeasurement::recordsPerSecond);
            double pushRate = median(push, JobMeasurement::recordsPerSecond);
            double kafkaCpu = median(kafka, CountJobComparison::totalCpuPerMillion);
            double pushCpu = median(push, CountJobComparison::totalCpuPerMillion);
            boolean met = pushRate >= 5 * kafkaRate && kafkaCpu >= 5 * pushCpu;
            b.append(
                    String.format(
                            Locale.ROOT,
                            "| %d | %.2f M | %.2f M | %.2f | %.3f | %.3f | %.2f | %.3f | %s |%n",
                            p,
                            kafkaRate / 1e6,
                            pushRate / 1e6,
                            pushRate / kafkaRate,
                            kafkaCpu,
                            pushCpu,
                            kafkaCpu / pushCpu,
                            median(kafka, m -> m.perMillion(m.brokerCpuSeconds())),
                            met ? "met" : "missed"));
        }
    }

    private static double totalCpuPerMillion(JobMeasurement m) {
        return m.perMillion(m.jobCpuSeconds() + m.brokerCpuSeconds());
    }

    private static List<JobMeasurement> select(List<JobMeasurement> runs, SourceMode mode, int p) {
        return runs.stream().filter(m -> m.mode() == mode && m.parallelism() == p).toList();
    }

    private static double median(List<JobMeasurement> runs, ToDoubleFunction<JobMeasurement> f) {
        return ComparisonReports.median(runs, m -> true, f);
    }
}
