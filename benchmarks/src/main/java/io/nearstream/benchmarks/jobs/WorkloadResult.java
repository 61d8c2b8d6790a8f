package io.nearstream.benchmarks.jobs;

import org.apache.flink.api.common.JobExecutionResult;

/**
 * What a workload's operators saw, summed over their subtasks: records in, records out (counted, or
 * matched by the filter), value bytes, and the span from the first record any subtask saw to the
 * last one any subtask finished ({@link System#nanoTime()}: all subtasks of a MiniCluster run in
 * one JVM).
 */
public record WorkloadResult(
        long recordsIn, long recordsOut, long valueBytes, long firstNanos, long lastNanos) {

    /** The processing span in seconds (0 when no record came). */
    public double seconds() {
        return recordsIn == 0 ? 0.0 : (lastNanos - firstNanos) / 1e9;
    }

    static WorkloadResult of(JobExecutionResult execution) {
        return new WorkloadResult(
                value(execution, RecordMeter.RECORDS_IN, 0L),
                value(execution, RecordMeter.RECORDS_OUT, 0L),
                value(execution, RecordMeter.VALUE_BYTES, 0L),
                value(execution, RecordMeter.FIRST_NANOS, 0L),
                value(execution, RecordMeter.LAST_NANOS, 0L));
    }

    private static long value(JobExecutionResult execution, String name, long fallback) {
        Object v = execution.getAccumulatorResult(name);
        return v == null ? fallback : ((Number) v).longValue();
    }
}
