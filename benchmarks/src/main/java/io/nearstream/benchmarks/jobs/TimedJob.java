package io.nearstream.benchmarks.jobs;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.minicluster.MiniCluster;

/**
 * A job that reads on (unbounded source) while producers write, as in Figs. 4-8 of the pull-vs-push
 * co-location paper (Marcu and Bouvry): it runs for a given time and prints, once a second, the
 * records its workload saw in that second - {@code SAMPLE <epoch ms> <records>} - so the benchmark
 * runner can take the median over the seconds when its producers ran. {@code SOURCE RUNNING} marks
 * the moment every task runs (the runner starts its producers then); {@code RESULT {json}} ends a
 * run that was not cancelled.
 */
final class TimedJob {

    private TimedJob() {}

    static void main(JobOptions options, int seconds) throws Exception {
        JobGraph graph = JobRunner.jobGraph(options);
        try (LocalFlinkCluster local = LocalFlinkCluster.start(options.parallelism())) {
            MiniCluster cluster = local.cluster();
            JobID id = cluster.submitJob(graph).get().getJobID();
            waitUntilRunning(cluster, id);
            System.out.println("SOURCE RUNNING");
            System.out.flush();
            List<Long> samples = new ArrayList<>();
            long last = RecordMeter.LIVE.sum();
            long next = System.currentTimeMillis() + 1000;
            long end = System.currentTimeMillis() + seconds * 1000L;
            while (System.currentTimeMillis() < end) {
                Thread.sleep(Math.max(1, next - System.currentTimeMillis()));
                long now = RecordMeter.LIVE.sum();
                samples.add(now - last);
                System.out.printf(
                        Locale.ROOT, "SAMPLE %d %d%n", System.currentTimeMillis(), now - last);
                System.out.flush();
                last = now;
                next += 1000;
                if (cluster.getJobStatus(id).get().isGloballyTerminalState()) {
                    break;
                }
            }
            cluster.cancelJob(id).get();
            System.out.printf(
                    Locale.ROOT,
                    "RESULT {\"workload\":\"%s\",\"mode\":\"%s\",\"parallelism\":%d,"
                            + "\"records\":%d,\"median_records_per_s\":%d}%n",
                    options.workload(),
                    options.mode().label(),
                    options.parallelism(),
                    RecordMeter.LIVE.sum(),
                    median(samples));
        }
    }

    /** Waits until the job and all its tasks run (a MiniCluster deploys them one by one). */
    private static void waitUntilRunning(MiniCluster cluster, JobID id) throws Exception {
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (System.nanoTime() < deadline) {
            JobStatus status = cluster.getJobStatus(id).get();
            if (status.isGloballyTerminalState()) {
                throw new IllegalStateException("job ended before it ran: " + status);
            }
            if (status == JobStatus.RUNNING
                    && cluster.getArchivedExecutionGraph(id)
                            .get()
                            .getAllExecutionVertices()
                            .iterator()
                            .hasNext()
                    && allTasksRunning(cluster, id)) {
                return;
            }
            Thread.sleep(50);
        }
        throw new IllegalStateException("the job's tasks did not all run within 120 s");
    }

    private static boolean allTasksRunning(MiniCluster cluster, JobID id) throws Exception {
        for (var v : cluster.getArchivedExecutionGraph(id).get().getAllExecutionVertices()) {
            if (v.getExecutionState()
                    != org.apache.flink.runtime.execution.ExecutionState.RUNNING) {
                return false;
            }
        }
        return true;
    }

    private static long median(List<Long> samples) {
        if (samples.isEmpty()) {
            return 0;
        }
        List<Long> sorted = new ArrayList<>(samples);
        Collections.sort(sorted);
        return sorted.get(sorted.size() / 2);
    }
}
