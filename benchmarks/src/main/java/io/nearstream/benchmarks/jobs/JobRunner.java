package io.nearstream.benchmarks.jobs;

import com.sun.management.OperatingSystemMXBean;
import io.nearstream.benchmarks.PreloadedStream;
import io.nearstream.client.NearstreamClient;
import io.nearstream.process.BrokerProcess;
import java.lang.management.ManagementFactory;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;

/**
 * Runs one benchmark job (a {@link Workload} over a {@link SourceMode}) on a local MiniCluster,
 * reading a stream to the tail it has when the job starts, and prints the result and one line of
 * JSON with the figures ({@link JobMeasurement#toJson()}).
 *
 * <pre>{@code
 * java -cp benchmarks/target/benchmarks.jar io.nearstream.benchmarks.jobs.JobRunner \
 *     --workload count --mode push --broker 127.0.0.1:7420 --stream bench \
 *     --parallelism 2 --records 10000000
 *
 * # or against a broker it starts and pre-loads itself (100-byte records, 4 streamlets):
 * java -cp benchmarks/target/benchmarks.jar io.nearstream.benchmarks.jobs.JobRunner \
 *     --workload count --mode pull --preload 1000000 --workers 2
 * }</pre>
 *
 * <p>Flags: {@code --workload count|filter|wordcount|windowed-wordcount|ysb}, {@code --mode
 * pull|push}, {@code --broker host:port}, {@code --stream NAME} (default {@value
 * PreloadedStream#STREAM}), {@code --parallelism P} (the whole job; default 1), {@code --records N}
 * (the records the stream holds: the job fails when it reads another number), {@code --fetch-bytes}
 * (pull: bytes per streamlet and fetch, default 1 MiB), {@code --push-slots}, {@code
 * --push-slot-bytes} (push: ring geometry, default 8 × 1 MiB), {@code --filter-pattern}; with
 * {@code --preload N} instead of {@code --broker}: starts {@code nearstreamd} ({@code --workers},
 * default 2) and loads N records of {@code --record-bytes} (100) into {@code --streamlets} (4)
 * streamlets in chunks of {@code --chunk-bytes} (65536). Workload flags ({@link Workload#PARAMS}):
 * {@code --output-dir DIR} (wordcount, windowed-wordcount, ysb: where the result files go), {@code
 * --output-stream NAME} (the same workloads: their results as records of that stream, instead of or
 * beside the files) with {@code --output-guarantee none|at-least-once|exactly-once}, {@code
 * --output-broker}, {@code --output-streamlets}, {@code --output-txn-prefix} and {@code
 * --checkpoint-interval-ms} ({@link StreamOutput}), {@code --ysb-campaigns FILE} (ysb: the
 * producer's ad -> campaign table), {@code --out-of-orderness-ms} (ysb: the watermark bound,
 * default 1000), {@code --source-filter} (a record filter the Nearstream source applies: {@link
 * SourceFilterFlag}), {@code --push-slot-format binary|binary-view} (push: records copied into the
 * slots, or views into the broker's segment files; default binary).
 *
 * <p>{@code --cluster session} submits the job to the Flink cluster that runs this main instead
 * ({@code flink run}, or a jar run through the REST API; {@link #submitToSessionCluster}).
 *
 * <p>Exit status 1 when the job read a different number of records than expected, 2 on bad flags.
 */
public final class JobRunner {

    /** {@code --cluster session} only: a rate limit after the source ({@link RateLimit}). */
    static final String RATE_LIMIT = "max-records-per-second-per-subtask";

    private static final Set<String> FLAGS =
            withWorkloadParams(
                    Set.of(
                            "workload",
                            "mode",
                            "broker",
                            "stream",
                            "parallelism",
                            "records",
                            "fetch-bytes",
                            "push-slots",
                            "push-slot-bytes",
                            "filter-pattern",
                            "preload",
                            "workers",
                            "streamlets",
                            "record-bytes",
                            "chunk-bytes",
                            "duration-s",
                            "cluster",
                            RATE_LIMIT));

    private static Set<String> withWorkloadParams(Set<String> flags) {
        Set<String> all = new java.util.HashSet<>(flags);
        all.addAll(Workload.PARAMS);
        return Set.copyOf(all);
    }

    /** The broker's CPU counter in its Stats RPC. */
    static final String BROKER_CPU_STAT = "nearstream_process_cpu_ns_total";

    private JobRunner() {}

    public static void main(String[] args) throws Exception {
        if (onSessionCluster(args)) {
            // Runs inside `flink run` or the JobManager (REST jar run): never System.exit, which
            // would end the JobManager; a bad flag is the exception the submitter sees.
            submitToSessionCluster(args);
            return;
        }
        Flags flags;
        JobOptions options;
        try {
            flags = new Flags(args, FLAGS);
            if (flags.has("preload") == flags.has("broker")) {
                throw new IllegalArgumentException("give either --broker or --preload");
            }
            if (flags.has(RATE_LIMIT)) {
                throw new IllegalArgumentException(
                        "--" + RATE_LIMIT + " is for --cluster " + SESSION_CLUSTER + " only");
            }
            if (!flags.string("cluster", "local").equals("local")) {
                throw new IllegalArgumentException(
                        "--cluster must be local or "
                                + SESSION_CLUSTER
                                + ", not "
                                + flags.required("cluster"));
            }
            long records =
                    flags.positiveLong(
                            "preload", flags.has("records") ? flags.positiveLong("records", 1) : 0);
            options =
                    options(
                            flags,
                            flags.has("broker") ? flags.required("broker") : "(started)",
                            records);
        } catch (IllegalArgumentException e) {
            System.err.println("JobRunner: " + e.getMessage());
            System.exit(2);
            return;
        }
        if (flags.has("duration-s")) {
            try {
                TimedJob.main(options, flags.positiveInt("duration-s", 1));
            } catch (Exception e) {
                System.err.println("JobRunner: the job failed");
                e.printStackTrace();
                System.exit(1);
            }
            System.exit(0);
            return;
        }
        JobMeasurement m;
        try {
            m = flags.has("preload") ? runPreloaded(flags, options) : runOn(options);
        } catch (Exception e) {
            System.err.println("JobRunner: the job failed");
            e.printStackTrace();
            System.exit(1);
            return;
        }
        System.out.println(m.summary());
        System.out.println(m.toJson());
        System.exit(0); // Netty and Flink leave non-daemon threads behind
    }

    /** The value of {@code --cluster} that submits to the cluster running this main. */
    private static final String SESSION_CLUSTER = "session";

    /** Whether the arguments hold {@code --cluster session}. */
    static boolean onSessionCluster(String[] args) {
        for (int i = 0; i + 1 < args.length; i++) {
            if (args[i].equals("--cluster") && args[i + 1].equals(SESSION_CLUSTER)) {
                return true;
            }
        }
        return false;
    }

    /**
     * {@code --cluster session}: submits the job to the Flink cluster that runs this main ({@code
     * flink run}, or a jar run through the REST API) instead of starting a local MiniCluster, and
     * returns once it is submitted (the job's own results are its outputs: {@code --output-stream}
     * or {@code --output-dir}). No measurement, and no {@code --preload} or {@code --duration-s}.
     * {@code --max-records-per-second-per-subtask N} slows the job down ({@link RateLimit}).
     */
    static JobClient submitToSessionCluster(String[] args) throws Exception {
        Flags flags = new Flags(args, FLAGS);
        if (flags.has("preload") || flags.has("duration-s")) {
            throw new IllegalArgumentException(
                    "--cluster session runs on the cluster as it is: no --preload, no --duration-s");
        }
        JobOptions options =
                options(flags, flags.required("broker"), flags.positiveLong("records", 0));
        Workload workload = Workload.named(options.workload());
        StreamExecutionEnvironment env = environment(options);
        StreamOutput.createStreamIfMissing(options);
        DataStream<byte[]> records = options.mode().source(env, options);
        if (flags.has(RATE_LIMIT)) {
            records =
                    records.map(new RateLimit(flags.positiveLong(RATE_LIMIT, 1))).name(RATE_LIMIT);
        }
        workload.addTo(records, options);
        JobClient job =
                env.executeAsync(
                        workload.name()
                                + "-"
                                + options.mode().label()
                                + "-p"
                                + options.parallelism());
        System.out.println("JOB " + job.getJobID());
        return job;
    }

    private static JobMeasurement runPreloaded(Flags flags, JobOptions options) throws Exception {
        try (PreloadedStream stream = preload(flags, options.expectedRecords());
                LocalFlinkCluster cluster = LocalFlinkCluster.start(options.parallelism())) {
            return run(
                    options.withSource(stream.broker().address(), stream.stream()),
                    cluster,
                    stream.client());
        }
    }

    private static JobMeasurement runOn(JobOptions options) throws Exception {
        if (options.mode() == SourceMode.KAFKA) {
            // --broker names Kafka's bootstrap servers: no Stats RPC (the runner reads Kafka's
            // CPU).
            try (LocalFlinkCluster cluster = LocalFlinkCluster.start(options.parallelism())) {
                return run(options, cluster, null);
            }
        }
        try (NearstreamClient stats = NearstreamClient.connect(options.broker());
                LocalFlinkCluster cluster = LocalFlinkCluster.start(options.parallelism())) {
            return run(options, cluster, stats);
        }
    }

    /** The job options the flags give (the broker and the expected records as given). */
    static JobOptions options(Flags flags, String broker, long expectedRecords) {
        String workload = Workload.named(flags.required("workload")).name();
        Map<String, String> params = new HashMap<>();
        for (String p : Workload.PARAMS) {
            if (flags.has(p)) {
                params.put(p, flags.required(p));
            }
        }
        return new JobOptions(
                workload,
                SourceMode.parse(flags.required("mode")),
                broker,
                flags.string("stream", PreloadedStream.STREAM),
                flags.positiveInt("parallelism", 1),
                expectedRecords,
                flags.positiveInt("fetch-bytes", JobOptions.DEFAULT_FETCH_BYTES),
                flags.positiveInt("push-slots", JobOptions.DEFAULT_PUSH_SLOTS),
                flags.positiveInt("push-slot-bytes", JobOptions.DEFAULT_PUSH_SLOT_BYTES),
                flags.string("filter-pattern", FilterWorkload.DEFAULT_PATTERN),
                flags.has("duration-s"),
                params);
    }

    /** Starts a broker and pre-loads the stream the flags ask for. */
    static PreloadedStream preload(Flags flags, long records) throws Exception {
        if (records > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("--preload is too large: " + records);
        }
        return PreloadedStream.start(
                BrokerProcess.start(flags.positiveInt("workers", 2)),
                flags.positiveInt("streamlets", 4),
                (int) records,
                flags.positiveInt("record-bytes", 100),
                flags.positiveInt("chunk-bytes", 64 * 1024));
    }

    /**
     * Runs the job of {@code options} on {@code cluster} and measures it.
     *
     * @param stats a connection to the broker for its CPU counter, or null (broker CPU -1)
     * @throws IllegalStateException when the job read a different number of records than {@code
     *     options.expectedRecords()} (when that is not 0)
     */
    public static JobMeasurement run(
            JobOptions options, LocalFlinkCluster cluster, @Nullable NearstreamClient stats)
            throws Exception {
        Workload workload = Workload.named(options.workload());
        JobGraph job = jobGraph(options);

        OperatingSystemMXBean os =
                (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        long brokerCpuBefore = brokerCpuNanos(stats);
        long cpuBefore = os.getProcessCpuTime();
        long start = System.nanoTime();
        JobExecutionResult execution = cluster.cluster().executeJobBlocking(job);
        long wall = System.nanoTime() - start;
        long cpu = os.getProcessCpuTime() - cpuBefore;
        long brokerCpuAfter = brokerCpuNanos(stats);

        WorkloadResult result = workload.result(execution);
        JobMeasurement m =
                new JobMeasurement(
                        workload.name(),
                        options.mode(),
                        options.parallelism(),
                        result,
                        result.seconds(),
                        wall / 1e9,
                        cpu / 1e9,
                        brokerCpuBefore < 0 || brokerCpuAfter < 0
                                ? -1
                                : (brokerCpuAfter - brokerCpuBefore) / 1e9);
        if (options.expectedRecords() > 0 && m.records() != options.expectedRecords()) {
            throw new IllegalStateException(
                    String.format(
                            "%s: read %,d records, the stream holds %,d",
                            job.getName(), m.records(), options.expectedRecords()));
        }
        return m;
    }

    /**
     * The job graph of {@code options}: its source, then the workload's operators. Creates the
     * {@code --output-stream} when it does not exist.
     */
    static JobGraph jobGraph(JobOptions options) throws Exception {
        Workload workload = Workload.named(options.workload());
        StreamExecutionEnvironment env = environment(options);
        StreamOutput.createStreamIfMissing(options);
        workload.addTo(options.mode().source(env, options), options);
        StreamGraph graph = env.getStreamGraph();
        graph.setJobName(
                workload.name() + "-" + options.mode().label() + "-p" + options.parallelism());
        return graph.getJobGraph();
    }

    /**
     * The environment a job of {@code options} is built in: its parallelism, object reuse, and the
     * checkpoints of {@link StreamOutput#configureCheckpoints}.
     */
    static StreamExecutionEnvironment environment(JobOptions options) {
        // Only builds the graph (executed on the given cluster); a test context may provide the
        // env.
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(options.parallelism());
        // Chained operators pass the source's byte[] on instead of copying it, in every mode.
        env.getConfig().enableObjectReuse();
        StreamOutput.configureCheckpoints(env, options);
        return env;
    }

    /** The broker's process CPU time from its Stats RPC, or -1 without a connection or counter. */
    static long brokerCpuNanos(@Nullable NearstreamClient stats) throws Exception {
        if (stats == null) {
            return -1;
        }
        Map<String, Long> values = stats.stats().get(30, TimeUnit.SECONDS);
        Long v = values.get(BROKER_CPU_STAT);
        return v == null ? -1 : v;
    }
}
