package io.nearstream.benchmarks.jobs;

import java.util.Locale;

/**
 * One job run's figures.
 *
 * @param seconds the processing span: first record seen to last subtask done ({@link
 *     WorkloadResult#seconds()})
 * @param jobSeconds the job's wall time from submission to result (deployment included)
 * @param jobCpuSeconds CPU time of this JVM (MiniCluster and job) during the job
 * @param brokerCpuSeconds the broker process's CPU time during the job, or -1 when unknown
 */
public record JobMeasurement(
        String workload,
        SourceMode mode,
        int parallelism,
        WorkloadResult result,
        double seconds,
        double jobSeconds,
        double jobCpuSeconds,
        double brokerCpuSeconds) {

    public long records() {
        return result.recordsIn();
    }

    public double recordsPerSecond() {
        return seconds > 0 ? records() / seconds : 0.0;
    }

    /** CPU seconds per million records, or -1 when {@code cpuSeconds} is unknown. */
    public double perMillion(double cpuSeconds) {
        return cpuSeconds < 0 || records() == 0 ? -1 : cpuSeconds / (records() / 1e6);
    }

    /** One line of JSON with every figure. */
    public String toJson() {
        return String.format(
                Locale.ROOT,
                "{\"workload\":\"%s\",\"mode\":\"%s\",\"parallelism\":%d,\"records\":%d,"
                        + "\"output\":%d,\"value_bytes\":%d,\"seconds\":%.4f,"
                        + "\"records_per_s\":%.1f,\"job_seconds\":%.4f,\"job_cpu_s\":%.4f,"
                        + "\"job_cpu_s_per_m\":%.4f,\"broker_cpu_s\":%.4f,"
                        + "\"broker_cpu_s_per_m\":%.4f}",
                workload,
                mode.label(),
                parallelism,
                records(),
                result.recordsOut(),
                result.valueBytes(),
                seconds,
                recordsPerSecond(),
                jobSeconds,
                jobCpuSeconds,
                perMillion(jobCpuSeconds),
                brokerCpuSeconds,
                perMillion(brokerCpuSeconds));
    }

    /** A line for people. */
    public String summary() {
        return String.format(
                Locale.ROOT,
                "%s %s p=%d: %,d records (output %,d) in %.3f s = %,.0f records/s; job %.3f s,"
                        + " job CPU %.2f s (%.3f s/M), broker CPU %.2f s (%.3f s/M)",
                workload,
                mode.label(),
                parallelism,
                records(),
                result.recordsOut(),
                seconds,
                recordsPerSecond(),
                jobSeconds,
                jobCpuSeconds,
                perMillion(jobCpuSeconds),
                brokerCpuSeconds,
                perMillion(brokerCpuSeconds));
    }
}
