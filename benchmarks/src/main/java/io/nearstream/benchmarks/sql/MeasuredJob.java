package io.nearstream.benchmarks.sql;

import com.sun.management.OperatingSystemMXBean;
import io.nearstream.benchmarks.jobs.JobMeasurement;
import io.nearstream.benchmarks.jobs.LocalFlinkCluster;
import io.nearstream.benchmarks.jobs.SourceMode;
import io.nearstream.benchmarks.jobs.WorkloadResult;
import io.nearstream.client.NearstreamClient;
import java.lang.management.ManagementFactory;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.JobID;
import org.apache.flink.runtime.execution.ExecutionState;
import org.apache.flink.runtime.executiongraph.AccessExecutionVertex;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.minicluster.MiniCluster;

/**
 * Runs a job graph on a {@link LocalFlinkCluster} and measures it the same way whoever built it,
 * the DataStream API or the SQL planner: a SQL job has none of the workloads' meters ({@code
 * MeterIn}), so the processing span is read from the job's tasks instead, from the first task
 * RUNNING to the last one FINISHED (the JobManager's timestamps, ms), which leaves scheduling and
 * deployment out and takes the sources' start (split discovery, push rings) in. CPU: this JVM's
 * process CPU over the job (MiniCluster and job), and the broker's.
 */
final class MeasuredJob {

    private MeasuredJob() {}

    /** The broker's process CPU seconds so far, or -1 when unknown. */
    @FunctionalInterface
    interface CpuClock {
        double seconds() throws Exception;
    }

    /** The figures of one run. */
    record Figures(
            JobExecutionResult execution,
            double taskSpanSeconds,
            double wallSeconds,
            double jobCpuSeconds,
            double brokerCpuSeconds) {

        /**
         * As a {@link JobMeasurement} (records/s over the task span), for its JSON line and
         * per-million figures.
         */
        JobMeasurement measurement(
                String workload, SourceMode mode, int parallelism, long recordsIn, long out) {
            return new JobMeasurement(
                    workload,
                    mode,
                    parallelism,
                    new WorkloadResult(recordsIn, out, 0, 0, (long) (taskSpanSeconds * 1e9)),
                    taskSpanSeconds,
                    wallSeconds,
                    jobCpuSeconds,
                    brokerCpuSeconds);
        }
    }

    /** The CPU counter of {@code nearstreamd}'s Stats RPC. */
    static CpuClock nearstream(NearstreamClient stats) {
        return () -> {
            Map<String, Long> values = stats.stats().get(30, TimeUnit.SECONDS);
            Long ns = values.get("nearstream_process_cpu_ns_total");
            return ns == null ? -1 : ns / 1e9;
        };
    }

    /** Runs {@code job} to its end on {@code cluster}. */
    static Figures run(JobGraph job, LocalFlinkCluster cluster, CpuClock broker) throws Exception {
        OperatingSystemMXBean os =
                (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        double brokerBefore = broker.seconds();
        long cpuBefore = os.getProcessCpuTime();
        long start = System.nanoTime();
        JobExecutionResult execution = cluster.cluster().executeJobBlocking(job);
        long wall = System.nanoTime() - start;
        long cpu = os.getProcessCpuTime() - cpuBefore;
        double brokerAfter = broker.seconds();
        return new Figures(
                execution,
                taskSpanSeconds(cluster.cluster(), execution.getJobID()),
                wall / 1e9,
                cpu / 1e9,
                brokerBefore < 0 || brokerAfter < 0 ? -1 : brokerAfter - brokerBefore);
    }

    /** First task RUNNING to last task FINISHED, in seconds. */
    static double taskSpanSeconds(MiniCluster cluster, JobID job) throws Exception {
        long first = Long.MAX_VALUE;
        long last = Long.MIN_VALUE;
        for (AccessExecutionVertex v :
                cluster.getArchivedExecutionGraph(job).get().getAllExecutionVertices()) {
            long running = v.getStateTimestamp(ExecutionState.RUNNING);
            long finished = v.getStateTimestamp(ExecutionState.FINISHED);
            if (running <= 0 || finished <= 0) {
                throw new IllegalStateException(
                        "task " + v.getTaskNameWithSubtaskIndex() + " did not run to its end");
            }
            first = Math.min(first, running);
            last = Math.max(last, finished);
        }
        return (last - first) / 1e3;
    }
}
