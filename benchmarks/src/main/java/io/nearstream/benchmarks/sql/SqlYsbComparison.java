package io.nearstream.benchmarks.sql;

import io.nearstream.benchmarks.jobs.ComparisonReports;
import io.nearstream.benchmarks.jobs.CountJobComparison;
import io.nearstream.benchmarks.jobs.Flags;
import io.nearstream.benchmarks.jobs.JobMeasurement;
import io.nearstream.benchmarks.jobs.JobOptions;
import io.nearstream.benchmarks.jobs.LocalFlinkCluster;
import io.nearstream.benchmarks.jobs.SourceMode;
import io.nearstream.benchmarks.jobs.YsbWorkload;
import io.nearstream.benchmarks.workloads.CampaignWindowCount;
import io.nearstream.benchmarks.workloads.ResultRecords;
import io.nearstream.benchmarks.workloads.StreamSetup;
import io.nearstream.benchmarks.workloads.YsbCampaigns;
import io.nearstream.benchmarks.workloads.YsbPipeline;
import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NettyNearstreamClient;
import io.nearstream.flink.source.ReadMode;
import io.nearstream.process.BrokerProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;

/**
 * YSB in Flink SQL ({@link YsbSql}) against the DataStream YSB job ({@code JobRunner --workload
 * ysb}: {@link YsbWorkload}, {@link YsbPipeline}), both reading in push mode, side by side in one
 * run. Starts {@code nearstreamd} ({@code --workers W}), pre-loads N YSB events ({@link
 * YsbPreload}: in event-time order per streamlet, {@code --event-rate} events per second of event
 * time), starts one MiniCluster, runs each job once untimed to warm the JVM, then R repetitions of
 * both (the order alternating), each job reading the whole stream as fast as it can and writing its
 * window results to a stream of its own (delivery guarantee none, no checkpoints). Every job must
 * count exactly the views the producer made, per campaign and window, or the run fails.
 *
 * <p>What it measures is the capacity of each job over a bounded, pre-loaded stream: events / (the
 * first task RUNNING → the last task FINISHED), and CPU seconds per million events (this JVM's, the
 * broker's) - not run.py's sustainable rate, which feeds a running job at a given rate and checks
 * it keeps up. Writes every run to {@code OUT/sql-ysb-vs-datastream.csv} and the medians with
 * SQL/DataStream ratios to {@code OUT/sql-ysb-vs-datastream.md}.
 *
 * <pre>{@code
 * java -Xmx2g --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.util=ALL-UNNAMED \
 *     --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
 *     -Dio.netty.tryReflectionSetAccessible=true \
 *     -cp benchmarks/target/benchmarks.jar:$(cat benchmarks/target/sql-classpath.txt) \
 *     io.nearstream.benchmarks.sql.SqlYsbComparison --events 10000000 --repetitions 3 --out docs/results/sql
 * }</pre>
 *
 * <p>Flags (defaults): {@code --events} (10 000 000), {@code --event-rate} (100 000), {@code
 * --parallelism} (2, the whole job), {@code --streamlets} (the parallelism: one streamlet per
 * source task, so no event is late), {@code --workers} (2), {@code --repetitions} (3), {@code
 * --seed} (42), {@code --out} (target/sql-results).
 */
public final class SqlYsbComparison {

    private static final Set<String> FLAGS =
            Set.of(
                    "events",
                    "event-rate",
                    "parallelism",
                    "streamlets",
                    "workers",
                    "repetitions",
                    "seed",
                    "out");

    static final String BASENAME = "sql-ysb-vs-datastream";
    static final String SQL = "ysb-sql";
    static final String DATASTREAM = "ysb-datastream";

    private static final String EVENTS = "ysb";
    private static final long START_MS = 1_700_000_000_000L; // a multiple of 10 s

    private SqlYsbComparison() {}

    public static void main(String[] args) throws Exception {
        Flags flags;
        try {
            flags = new Flags(args, FLAGS);
        } catch (IllegalArgumentException e) {
            System.err.println("SqlYsbComparison: " + e.getMessage());
            System.exit(2);
            return;
        }
        try {
            run(flags, String.join(" ", args));
        } catch (Exception e) {
            System.err.println("SqlYsbComparison failed");
            e.printStackTrace();
            System.exit(1);
        }
        System.exit(0); // Netty and Flink leave non-daemon threads behind
    }

    /** What every job of one run shares. */
    private record Setup(
            String broker,
            NearstreamClient client,
            LocalFlinkCluster cluster,
            int parallelism,
            YsbPreload.Expected expected,
            Map<String, String> adToCampaign,
            Path campaignsFile) {}

    static List<JobMeasurement> run(Flags flags, String commandLine) throws Exception {
        long events = flags.positiveLong("events", 10_000_000);
        long eventRate = flags.positiveLong("event-rate", 100_000);
        int parallelism = flags.positiveInt("parallelism", 2);
        int streamlets = flags.positiveInt("streamlets", parallelism);
        int workers = flags.positiveInt("workers", 2);
        int repetitions = flags.positiveInt("repetitions", 3);
        long seed = flags.longValue("seed", 42, Long.MIN_VALUE);
        Path out = Path.of(flags.string("out", "target/sql-results"));
        String started = Instant.now().toString();
        double loadBefore = ComparisonReports.loadAverage();

        YsbCampaigns campaigns = YsbCampaigns.generate(seed);
        Path campaignsFile = Files.createTempFile("ysb-campaigns-", ".csv");
        campaigns.write(campaignsFile);
        List<JobMeasurement> runs = new ArrayList<>();
        double preloadSeconds;
        try (BrokerProcess broker = BrokerProcess.start(workers);
                NearstreamClient client = NettyNearstreamClient.connect(broker.address());
                LocalFlinkCluster cluster = LocalFlinkCluster.start(parallelism)) {
            long loadStart = System.nanoTime();
            YsbPreload.Expected expected =
                    YsbPreload.load(
                            client,
                            EVENTS,
                            streamlets,
                            campaigns,
                            events,
                            eventRate,
                            START_MS,
                            seed + 1);
            preloadSeconds = (System.nanoTime() - loadStart) / 1e9;
            System.out.printf(
                    Locale.ROOT,
                    "# pre-loaded %,d YSB events (%,d views, %,d campaign windows) into %d"
                            + " streamlets in %.1f s%n",
                    events,
                    expected.views,
                    expected.windows.size(),
                    streamlets,
                    preloadSeconds);
            Setup setup =
                    new Setup(
                            broker.address(),
                            client,
                            cluster,
                            parallelism,
                            expected,
                            campaigns.adToCampaign(),
                            campaignsFile);
            int index = 0;
            for (String engine : List.of(SQL, DATASTREAM)) {
                System.out.println("warm-up: " + runOne(engine, setup, index++).summary());
            }
            for (int r = 0; r < repetitions; r++) {
                for (String engine : ComparisonReports.order(List.of(SQL, DATASTREAM), r)) {
                    JobMeasurement m = runOne(engine, setup, index++);
                    System.out.println(m.summary());
                    System.out.println(m.toJson());
                    runs.add(m);
                }
            }
        } finally {
            Files.deleteIfExists(campaignsFile);
        }
        String setting =
                String.format(
                        Locale.ROOT,
                        "%,d YSB events (%,d event-time events/s: %d s of event time) in %d"
                                + " streamlets, pre-loaded in %.1f s; job parallelism %d;"
                                + " nearstreamd --workers %d; %d repetitions; started %s, load"
                                + " average %.2f before and %.2f after",
                        events,
                        eventRate,
                        events / eventRate,
                        streamlets,
                        preloadSeconds,
                        parallelism,
                        workers,
                        repetitions,
                        started,
                        loadBefore,
                        ComparisonReports.loadAverage());
        ComparisonReports.write(
                out,
                BASENAME,
                CountJobComparison.csv(runs),
                markdown(runs, parallelism, setting, commandLine));
        return runs;
    }

    /** Runs one job over the whole stream and checks its window results. */
    private static JobMeasurement runOne(String engine, Setup setup, int index) throws Exception {
        String output = "ysb-windows-" + engine + "-" + index;
        StreamSetup.ensure(setup.client(), output, 1);
        int p = setup.parallelism();
        StreamExecutionEnvironment env = SqlJobs.environment(p, RuntimeExecutionMode.STREAMING);
        JobGraph job;
        if (engine.equals(SQL)) {
            StreamTableEnvironment tables = SqlJobs.tables(env, RuntimeExecutionMode.STREAMING);
            YsbSql ysb =
                    new YsbSql(
                            setup.broker(),
                            EVENTS,
                            output,
                            ReadMode.PUSH,
                            true,
                            DeliveryGuarantee.NONE);
            job =
                    SqlJobs.insert(
                            env,
                            tables,
                            ysb.register(tables, setup.adToCampaign()),
                            SQL + "-push-p" + p);
        } else {
            // JobRunner's YSB job (--workload ysb --mode push --output-stream O
            // --output-guarantee none), without checkpoints, as the SQL job.
            JobOptions options =
                    JobOptions.bounded(
                            YsbWorkload.NAME,
                            SourceMode.PUSH,
                            setup.broker(),
                            EVENTS,
                            p,
                            setup.expected().events,
                            Map.of(
                                    "ysb-campaigns",
                                    setup.campaignsFile().toString(),
                                    "output-stream",
                                    output,
                                    "output-guarantee",
                                    "none"));
            YsbWorkload workload = new YsbWorkload();
            workload.addTo(SourceMode.PUSH.source(env, options), options);
            job = SqlJobs.jobGraph(env, DATASTREAM + "-push-p" + p);
        }
        MeasuredJob.Figures figures =
                MeasuredJob.run(job, setup.cluster(), MeasuredJob.nearstream(setup.client()));
        if (engine.equals(DATASTREAM)) {
            long read = new YsbWorkload().result(figures.execution()).recordsIn();
            if (read != setup.expected().events) {
                throw new IllegalStateException(
                        engine + " read " + read + " events of " + setup.expected().events);
            }
        }
        List<CampaignWindowCount> results = new ArrayList<>();
        for (String line : ResultRecords.readAll(setup.client(), output, Duration.ofMillis(500))) {
            results.add(CampaignWindowCount.parseCsv(line));
        }
        setup.expected().check(engine, results);
        return figures.measurement(
                engine, SourceMode.PUSH, p, setup.expected().events, results.size());
    }

    static String markdown(
            List<JobMeasurement> runs, int parallelism, String setting, String command) {
        StringBuilder b =
                new StringBuilder("# YSB: Flink SQL vs the DataStream job, push mode\n\n");
        b.append("Written by `SqlYsbComparison`; rerun with (from the repository root, after\n`")
                .append(Reports.BUILD)
                .append("`):\n\n```sh\n")
                .append(Reports.JAVA)
                .append(" \\\n    io.nearstream.benchmarks.sql.SqlYsbComparison ")
                .append(command)
                .append("\n```\n\n");
        b.append(
                "Both jobs read the same pre-loaded events in push mode, to the stream's tail at"
                        + " job start, and write their window results to a stream (guarantee none,"
                        + " no checkpoints, object reuse on, parallelism "
                        + parallelism
                        + "). The DataStream job is `JobRunner --workload ysb`"
                        + " (`YsbPipeline`: a byte-level JSON scan of three fields and an"
                        + " in-operator ad → campaign lookup, chained to the source, keyBy"
                        + " campaign, 10 s event-time windows); the SQL job is `YsbSql`:\n\n```sql\n");
        YsbSql shown =
                new YsbSql(
                        "HOST:PORT",
                        EVENTS,
                        "RESULTS",
                        ReadMode.PUSH,
                        true,
                        DeliveryGuarantee.NONE);
        for (String statement : shown.ddl()) {
            b.append(statement).append(";\n\n");
        }
        b.append(shown.insert()).append(";\n```\n\n");
        b.append(
                "events/s = events / (first task RUNNING → last task FINISHED), read from the"
                        + " JobManager's task timestamps for both jobs alike (the SQL job has no"
                        + " record meter): it is the capacity over a pre-loaded stream, not"
                        + " run.py's sustainable rate. CPU s/M = CPU seconds per million events:"
                        + " job = this JVM's process CPU over the job (MiniCluster and job),"
                        + " broker = nearstreamd's (Stats RPC). Every job's window results were"
                        + " checked, exactly, against the counts the producer recorded. Every"
                        + " run: `"
                        + BASENAME
                        + ".csv`. Medians over the repetitions; ratio = SQL / DataStream.\n\n");
        b.append(
                "| p | DataStream events/s | SQL events/s | SQL/DataStream | DataStream job CPU"
                        + " s/M | SQL job CPU s/M | SQL/DataStream | DataStream broker CPU s/M |"
                        + " SQL broker CPU s/M |\n");
        b.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        double dsRate =
                ComparisonReports.median(
                        runs,
                        m -> m.workload().equals(DATASTREAM),
                        JobMeasurement::recordsPerSecond);
        double sqlRate =
                ComparisonReports.median(
                        runs, m -> m.workload().equals(SQL), JobMeasurement::recordsPerSecond);
        double dsCpu =
                ComparisonReports.median(
                        runs,
                        m -> m.workload().equals(DATASTREAM),
                        m -> m.perMillion(m.jobCpuSeconds()));
        double sqlCpu =
                ComparisonReports.median(
                        runs, m -> m.workload().equals(SQL), m -> m.perMillion(m.jobCpuSeconds()));
        double dsBroker =
                ComparisonReports.median(
                        runs,
                        m -> m.workload().equals(DATASTREAM),
                        m -> m.perMillion(m.brokerCpuSeconds()));
        double sqlBroker =
                ComparisonReports.median(
                        runs,
                        m -> m.workload().equals(SQL),
                        m -> m.perMillion(m.brokerCpuSeconds()));
        b.append(
                String.format(
                        Locale.ROOT,
                        "| %d | %.3f M | %.3f M | %.2f | %.3f | %.3f | %.2f | %.3f | %.3f |%n",
                        parallelism,
                        dsRate / 1e6,
                        sqlRate / 1e6,
                        sqlRate / dsRate,
                        dsCpu,
                        sqlCpu,
                        sqlCpu / dsCpu,
                        dsBroker,
                        sqlBroker));
        b.append("\n").append(setting).append(".\n");
        return b.toString();
    }
}
