package io.nearstream.benchmarks.jobs;

import org.apache.flink.api.common.functions.MapFunction;

/**
 * Passes records on at no more than a given rate per subtask, by sleeping: for runs that must act
 * while a job over a bounded stream still runs (a test that kills a TaskManager mid-job), not for
 * measurements. {@code JobRunner --cluster session --max-records-per-second-per-subtask N}.
 */
final class RateLimit implements MapFunction<byte[], byte[]> {
    private static final long serialVersionUID = 1L;

    private final long nanosPerRecord;
    private transient long next;

    RateLimit(long recordsPerSecond) {
        if (recordsPerSecond <= 0) {
            throw new IllegalArgumentException("records per second must be > 0");
        }
        this.nanosPerRecord = 1_000_000_000L / recordsPerSecond;
    }

    @Override
    public byte[] map(byte[] record) throws InterruptedException {
        long now = System.nanoTime();
        if (next == 0) {
            next = now;
        }
        next += nanosPerRecord;
        long ahead = next - now;
        if (ahead > 1_000_000) { // sleep in steps of at least a millisecond
            Thread.sleep(ahead / 1_000_000);
        }
        return record;
    }
}
