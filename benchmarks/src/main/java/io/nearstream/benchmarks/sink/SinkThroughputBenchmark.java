package io.nearstream.benchmarks.sink;

import io.nearstream.benchmarks.jobs.LocalFlinkCluster;
import io.nearstream.benchmarks.kafka.KafkaBroker;
import io.nearstream.benchmarks.kafka.ProcessCpu;
import io.nearstream.benchmarks.sink.SinkRun.TxnLatency;
import io.nearstream.benchmarks.sink.SinkRun.Visibility;
import io.nearstream.benchmarks.sink.SinkRunProbe.TxnTrace;
import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NettyNearstreamClient;
import io.nearstream.client.StreamConfig;
import io.nearstream.process.BrokerProcess;
import io.nearstream.process.ChildProcesses;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.WebOptions;
import org.apache.flink.runtime.checkpoint.AbstractCheckpointStats;
import org.apache.flink.runtime.checkpoint.CheckpointStatsSnapshot;
import org.apache.flink.runtime.checkpoint.CompletedCheckpointStats;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobmaster.JobResult;
import org.apache.flink.runtime.minicluster.MiniCluster;

/**
 * Flink sinks side by side: a job of {@code DataGeneratorSource} → sink with records of {@code
 * --record-bytes} (100) and checkpoints every {@code --checkpoint-ms} (1000), for the Nearstream
 * sink under {@code AT_LEAST_ONCE} and {@code EXACTLY_ONCE} and Flink's {@code KafkaSink} under
 * both against a local Kafka node, with as many partitions as the stream has streamlets.
 *
 * <p>One invocation starts {@code nearstreamd} (its streams {@code --durability}, async by default,
 * files in a temporary directory), a Kafka node and one MiniCluster, then runs every sink {@code
 * --repetitions} times, interleaved (A B C D A B C D), each run on a new stream or topic that is
 * deleted afterwards. A run: submit the job, wait for its first record, let it run {@code
 * --warmup-s}, then measure {@code --measure-s}: records handed to the sink (counted by an operator
 * chained before it), this JVM's CPU (MiniCluster and job) and the sink's broker process CPU (from
 * {@code /proc}). Then it waits for one more checkpoint, cancels the job and checks that the broker
 * took in at least every record counted up to the window's end.
 *
 * <p>For Nearstream exactly-once, each transaction committed in the window is also timed: the sink
 * is wrapped ({@link TracingNearstreamSink}) to note each transaction's records and when the
 * committer's {@code commit} began and returned, and a reader ({@link VisibilityReader}) long-polls
 * the stream and notes when each transaction's first chunk becomes fetchable; the JobManager's
 * checkpoint statistics give each checkpoint's last acknowledgement.
 *
 * <p>Writes {@code OUT/sink-throughput.csv} (every run), {@code OUT/sink-throughput-txns.csv}
 * (every timed transaction) and {@code OUT/sink-throughput.md} (medians, ratios, targets). Flags:
 * {@link SinkBenchmarkOptions}.
 *
 * <pre>{@code
 * java -Xms2g -Xmx2g -XX:+UseParallelGC --add-opens=java.base/java.lang=ALL-UNNAMED \
 *     --add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED \
 *     --add-opens=java.base/sun.nio.ch=ALL-UNNAMED -Dio.netty.tryReflectionSetAccessible=true \
 *     -cp benchmarks/target/benchmarks.jar io.nearstream.benchmarks.sink.SinkThroughputBenchmark \
 *     --repetitions 2 --warmup-s 5 --measure-s 25 --out docs/results
 * }</pre>
 */
public final class SinkThroughputBenchmark {

    static final String BASENAME = "sink-throughput";

    /** Set by the runner: its command line, quoted on the results page. */
    static final String RUNNER_COMMAND_PROPERTY = "nearstream.bench.command";

    private static final Duration FIRST_RECORD_TIMEOUT = Duration.ofSeconds(120);
    private static final Duration CANCEL_TIMEOUT = Duration.ofSeconds(120);
    private static final long POLL_MS = 100;
    private static final long SETTLE_MS = 2_000;

    private SinkThroughputBenchmark() {}

    public static void main(String[] args) {
        SinkBenchmarkOptions options;
        try {
            options = SinkBenchmarkOptions.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("SinkThroughputBenchmark: " + e.getMessage());
            System.exit(2);
            return;
        }
        try {
            run(options, commandLine(args));
        } catch (Exception e) {
            System.err.println("SinkThroughputBenchmark failed");
            e.printStackTrace();
            System.exit(1);
        }
        System.exit(0); // Netty, Kafka's clients and Flink leave non-daemon threads behind
    }

    /** Runs every sink of {@code options}, writes the result files and returns the runs. */
    static List<SinkRun> run(SinkBenchmarkOptions options, String command) throws Exception {
        Files.createDirectories(options.out());
        SinkResults results = new SinkResults(options, command, Machine.describe());
        boolean withKafka = options.sinks().stream().anyMatch(SinkKind::kafka);
        Path dataDir = Files.createTempDirectory("sink-bench-nearstreamd-");
        Configuration flink = new Configuration();
        // The checkpoint statistics of a whole run stay available (the default keeps 10).
        flink.set(WebOptions.CHECKPOINTS_HISTORY_SIZE, 10_000);
        try (BrokerProcess nearstreamd =
                        BrokerProcess.start(options.workers(), "--data-dir", dataDir.toString());
                NearstreamClient admin = NettyNearstreamClient.connect(nearstreamd.address());
                KafkaBroker kafka =
                        withKafka
                                ? KafkaBroker.start(
                                        Map.of(
                                                "log.retention.check.interval.ms", "5000",
                                                // A deleted topic's files go at once, not
                                                // during a later run.
                                                "log.segment.delete.delay.ms", "0",
                                                "file.delete.delay.ms", "0"))
                                : null;
                LocalFlinkCluster cluster = LocalFlinkCluster.start(options.parallelism(), flink)) {
            Brokers brokers = new Brokers(nearstreamd, admin, kafka);
            results.setVersions(kafka == null ? null : kafka.version());
            int runNumber = 0;
            for (int rep = 1; rep <= options.repetitions(); rep++) {
                for (SinkKind kind : options.sinks()) {
                    SinkRun run = runOne(kind, rep, ++runNumber, options, brokers, cluster);
                    Thread.sleep(SETTLE_MS); // the last run's files deleted, its threads gone
                    results.add(run);
                    System.out.println(SinkResults.summary(run));
                }
            }
        } finally {
            ChildProcesses.deleteRecursively(dataDir);
        }
        results.write();
        System.out.print(results.markdown());
        return results.runs();
    }

    /** The brokers of the benchmark; {@code kafka} is null when no Kafka sink runs. */
    private record Brokers(
            BrokerProcess nearstreamd, NearstreamClient admin, @Nullable KafkaBroker kafka) {

        double cpuSeconds(boolean ofKafka) throws IOException {
            if (ofKafka) {
                return kafka == null ? 0 : kafka.cpuSeconds();
            }
            return ProcessCpu.seconds(nearstreamd.pid());
        }
    }

    /** The figures read at one instant. */
    record Snapshot(
            long nanos, long wallMs, long records, double jvmCpu, double nsCpu, double kafkaCpu) {

        static Snapshot take(SinkRunProbe probe, Brokers brokers) throws IOException {
            long nanos = System.nanoTime();
            long wall = System.currentTimeMillis();
            long records = probe.records();
            double jvm = ProcessCpu.ofThisProcess();
            return new Snapshot(
                    nanos, wall, records, jvm, brokers.cpuSeconds(false), brokers.cpuSeconds(true));
        }

        /** The wall-clock time (ms since the epoch) of a {@link System#nanoTime()} reading. */
        double wallAt(long atNanos) {
            return wallMs + (atNanos - nanos) / 1e6;
        }
    }

    private static SinkRun runOne(
            SinkKind kind,
            int repetition,
            int runNumber,
            SinkBenchmarkOptions options,
            Brokers brokers,
            LocalFlinkCluster cluster)
            throws Exception {
        String name = "sink-bench-" + runNumber;
        String runId = name + "-" + UUID.randomUUID();
        SinkRunProbe probe = SinkRunProbe.register(runId, options.parallelism());
        MiniCluster mini = cluster.cluster();
        long retentionBytes = options.retentionMb() * 1024L * 1024L;
        SinkJobs.Target target;
        if (kind.kafka()) {
            brokers.kafka()
                    .createTopic(
                            name,
                            options.streamlets(),
                            Map.of(
                                    "retention.bytes", Long.toString(retentionBytes),
                                    "segment.bytes", Integer.toString(64 << 20)));
            target = new SinkJobs.Target(brokers.kafka().bootstrapServers(), name, name);
        } else {
            if (kind.nearstream()) {
                brokers.admin()
                        .createStream(
                                new StreamConfig(
                                        name,
                                        options.streamlets(),
                                        0,
                                        0,
                                        0,
                                        options.durability(),
                                        retentionBytes,
                                        -1))
                        .get(30, TimeUnit.SECONDS);
            }
            target = new SinkJobs.Target(brokers.nearstreamd().address(), name, "bench");
        }
        long brokerCounterBefore = nearstreamCounter(kind, brokers.admin());
        VisibilityReader reader =
                kind == SinkKind.NEARSTREAM_EO
                        ? new VisibilityReader(brokers.nearstreamd().address(), name, 0)
                        : null;
        JobGraph job = SinkJobs.jobGraph(kind, options, target, runId);
        JobID id = job.getJobID();
        Snapshot s0;
        Snapshot s1;
        Map<Long, CompletedCheckpointStats> checkpoints;
        try {
            mini.submitJob(job).get(60, TimeUnit.SECONDS);
            awaitFirstRecord(probe, mini, id);
            sleepWhileRunning(mini, id, TimeUnit.SECONDS.toMillis(options.warmupSeconds()));
            s0 = Snapshot.take(probe, brokers);
            sleepWhileRunning(mini, id, TimeUnit.SECONDS.toMillis(options.measureSeconds()));
            s1 = Snapshot.take(probe, brokers);
            awaitCheckpointAfter(probe, s1.nanos(), mini, id, options.checkpointMs());
            checkpoints = completedCheckpoints(mini, id);
        } finally {
            cancel(mini, id);
            if (reader != null) {
                reader.close();
            }
            SinkRunProbe.unregister(runId);
        }
        if (reader != null && reader.failure() != null) {
            throw new IllegalStateException("the visibility reader failed", reader.failure());
        }
        long brokerRecords;
        if (kind.kafka()) {
            brokerRecords =
                    brokers.kafka().endOffsets(name).values().stream()
                            .mapToLong(Long::longValue)
                            .sum();
            brokers.kafka().deleteTopic(name);
        } else if (kind == SinkKind.NEARSTREAM_EO) {
            // Committed, not just appended: the records of the transactions whose TxnCommit the
            // broker acknowledged.
            brokerRecords =
                    probe.txns().stream()
                            .filter(t -> t.commitEndNanos != 0)
                            .mapToLong(TxnTrace::records)
                            .sum();
            brokers.admin().deleteStream(name).get(60, TimeUnit.SECONDS);
        } else if (kind.nearstream()) {
            brokerRecords = nearstreamCounter(kind, brokers.admin()) - brokerCounterBefore;
            brokers.admin().deleteStream(name).get(60, TimeUnit.SECONDS);
        } else {
            brokerRecords = -1;
        }

        List<Double> durations = new ArrayList<>();
        for (CompletedCheckpointStats c : checkpoints.values()) {
            if (c.getLatestAckTimestamp() >= s0.wallMs()
                    && c.getLatestAckTimestamp() <= s1.wallMs()) {
                durations.add((double) c.getEndToEndDuration());
            }
        }
        boolean kafkaBroker = kind.kafka();
        double brokerCpu =
                kind == SinkKind.DISCARD
                        ? 0
                        : kafkaBroker ? s1.kafkaCpu() - s0.kafkaCpu() : s1.nsCpu() - s0.nsCpu();
        double idleCpu =
                kind == SinkKind.DISCARD
                        ? (s1.kafkaCpu() - s0.kafkaCpu()) + (s1.nsCpu() - s0.nsCpu())
                        : kafkaBroker ? s1.nsCpu() - s0.nsCpu() : s1.kafkaCpu() - s0.kafkaCpu();
        return new SinkRun(
                kind,
                repetition,
                (s1.nanos() - s0.nanos()) / 1e9,
                s1.records() - s0.records(),
                s1.jvmCpu() - s0.jvmCpu(),
                brokerCpu,
                idleCpu,
                s1.records(),
                probe.records(),
                brokerRecords,
                durations.size(),
                SinkRun.percentile(durations, 50),
                reader == null
                        ? null
                        : visibility(probe.txns(), reader.observations(), s0, s1, checkpoints));
    }

    /**
     * The latencies of the transactions whose commit began in the window. A transaction's visible
     * time is the earliest observation of a record of it; one the reader did not observe (it jumped
     * past it) is left out and counted by {@link Visibility#unobserved()}.
     */
    static Visibility visibility(
            List<TxnTrace> txns,
            List<long[]> observations,
            Snapshot s0,
            Snapshot s1,
            Map<Long, CompletedCheckpointStats> checkpoints) {
        List<long[]> byIndex = new ArrayList<>(observations);
        byIndex.sort(Comparator.comparingLong(o -> o[0]));
        List<TxnLatency> timed = new ArrayList<>();
        int unobserved = 0;
        int early = 0;
        txns.sort(Comparator.comparingLong(t -> t.commitStartNanos));
        for (TxnTrace t : txns) {
            if (t.commitStartNanos < s0.nanos()
                    || t.commitStartNanos > s1.nanos()
                    || t.commitEndNanos == 0
                    || t.firstIndex < 0) {
                continue;
            }
            long visible = Long.MAX_VALUE;
            for (int i = firstAtOrAbove(byIndex, t.firstIndex);
                    i < byIndex.size() && byIndex.get(i)[0] <= t.lastIndex;
                    i++) {
                visible = Math.min(visible, byIndex.get(i)[1]);
            }
            if (visible == Long.MAX_VALUE) {
                unobserved++;
                continue;
            }
            if (visible < t.commitStartNanos) {
                early++; // visible before the commit began: a correctness bug, reported as such
            }
            CompletedCheckpointStats cp = checkpoints.get(t.checkpointId);
            double ackToVisible =
                    cp == null ? Double.NaN : s0.wallAt(visible) - cp.getLatestAckTimestamp();
            timed.add(
                    new TxnLatency(
                            t.checkpointId,
                            t.records(),
                            (visible - t.commitStartNanos) / 1e6,
                            ackToVisible,
                            (t.commitEndNanos - t.commitStartNanos) / 1e6,
                            t.flushNanos / 1e6,
                            t.prepareNanos / 1e6));
        }
        return new Visibility(timed, unobserved, early);
    }

    private static int firstAtOrAbove(List<long[]> byIndex, long index) {
        int lo = 0;
        int hi = byIndex.size();
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (byIndex.get(mid)[0] < index) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    /** The broker's count of records appended outside transactions. */
    private static long nearstreamCounter(SinkKind kind, NearstreamClient admin) throws Exception {
        if (kind != SinkKind.NEARSTREAM_ALO) {
            return 0;
        }
        String name = "nearstream_append_records_total";
        Long v = admin.stats().get(30, TimeUnit.SECONDS).get(name);
        if (v == null) {
            throw new IllegalStateException("the broker's Stats lack " + name);
        }
        return v;
    }

    private static void awaitFirstRecord(SinkRunProbe probe, MiniCluster mini, JobID id)
            throws Exception {
        long deadline = System.nanoTime() + FIRST_RECORD_TIMEOUT.toNanos();
        while (probe.records() == 0) {
            checkRunning(mini, id);
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(
                        "job " + id + " wrote no record within " + FIRST_RECORD_TIMEOUT);
            }
            Thread.sleep(10);
        }
    }

    private static void sleepWhileRunning(MiniCluster mini, JobID id, long millis)
            throws Exception {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        long left;
        while ((left = end - System.nanoTime()) > 0) {
            Thread.sleep(Math.min(POLL_MS, TimeUnit.NANOSECONDS.toMillis(left) + 1));
            checkRunning(mini, id);
        }
    }

    /**
     * Waits for the completion of a checkpoint whose barrier came after {@code afterNanos}: then
     * every record counted before it is flushed (at least once) or committed (exactly once).
     */
    private static void awaitCheckpointAfter(
            SinkRunProbe probe, long afterNanos, MiniCluster mini, JobID id, long checkpointMs)
            throws Exception {
        long deadline =
                System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(3 * checkpointMs + 30_000);
        while (!probe.checkpointCompletedAfter(afterNanos)) {
            checkRunning(mini, id);
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(
                        "no checkpoint of job " + id + " completed after the measurement");
            }
            Thread.sleep(10);
        }
    }

    private static void checkRunning(MiniCluster mini, JobID id) throws Exception {
        JobStatus status = mini.getJobStatus(id).get(30, TimeUnit.SECONDS);
        if (status.isGloballyTerminalState()) {
            JobResult result = mini.requestJobResult(id).get(30, TimeUnit.SECONDS);
            Throwable cause =
                    result.getSerializedThrowable()
                            .map(
                                    t ->
                                            (Throwable)
                                                    t.deserializeError(
                                                            ClassLoader.getSystemClassLoader()))
                            .orElse(null);
            throw new IllegalStateException("job " + id + " ended early: " + status, cause);
        }
    }

    private static Map<Long, CompletedCheckpointStats> completedCheckpoints(
            MiniCluster mini, JobID id) throws Exception {
        CheckpointStatsSnapshot stats =
                mini.getExecutionGraph(id).get(30, TimeUnit.SECONDS).getCheckpointStatsSnapshot();
        Map<Long, CompletedCheckpointStats> completed = new HashMap<>();
        if (stats != null) {
            for (AbstractCheckpointStats s : stats.getHistory().getCheckpoints()) {
                if (s instanceof CompletedCheckpointStats c) {
                    completed.put(c.getCheckpointId(), c);
                }
            }
        }
        return completed;
    }

    private static void cancel(MiniCluster mini, JobID id) {
        try {
            if (!mini.getJobStatus(id).get(30, TimeUnit.SECONDS).isGloballyTerminalState()) {
                mini.cancelJob(id).get(CANCEL_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            }
            mini.requestJobResult(id).get(CANCEL_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("could not cancel job " + id, e);
        }
    }

    /**
     * {@code java [JVM options] -cp benchmarks/target/benchmarks.jar CLASS ARGS}, after the
     * runner's command when {@code benchmarks/runner/run.py sink} started it (it passes its own
     * command line in {@value #RUNNER_COMMAND_PROPERTY}).
     */
    static String commandLine(String[] args) {
        String runner = System.getProperty(RUNNER_COMMAND_PROPERTY);
        List<String> jvm = new ArrayList<>();
        for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (!a.startsWith("-Dnearstream.") && !a.startsWith("-javaagent")) {
                jvm.add(a);
            }
        }
        String java =
                String.format(
                        Locale.ROOT,
                        "java %s -cp benchmarks/target/benchmarks.jar %s %s",
                        String.join(" ", jvm),
                        SinkThroughputBenchmark.class.getName(),
                        String.join(" ", args));
        return runner == null || runner.isBlank() ? java : runner + "\n# which runs:\n" + java;
    }
}
