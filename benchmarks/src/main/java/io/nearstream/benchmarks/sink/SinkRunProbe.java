package io.nearstream.benchmarks.sink;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * What one benchmark job reports to the benchmark while it runs, through a registry in this JVM
 * (the job runs on a MiniCluster in the same JVM; its operators find the probe by the run's id):
 * the records each subtask handed to the sink, when the last checkpoint completed, and for the
 * traced Nearstream exactly-once sink every transaction's records and commit times.
 */
final class SinkRunProbe {

    private static final Map<String, SinkRunProbe> RUNS = new ConcurrentHashMap<>();

    /** One counter per 64-byte line, so the subtasks' counters do not share a cache line. */
    private static final int STRIDE = 8;

    private final AtomicLongArray records;
    private final AtomicLong lastCheckpointId = new AtomicLong(-1);

    /** Checkpoint id → when its barrier passed the last subtask's probe (nanoTime). */
    private final Map<Long, Long> barriers = new ConcurrentHashMap<>();

    private final Map<String, TxnTrace> txns = new ConcurrentHashMap<>();

    private SinkRunProbe(int parallelism) {
        this.records = new AtomicLongArray(parallelism * STRIDE);
    }

    static SinkRunProbe register(String runId, int parallelism) {
        SinkRunProbe probe = new SinkRunProbe(parallelism);
        if (RUNS.putIfAbsent(runId, probe) != null) {
            throw new IllegalStateException("run " + runId + " is registered already");
        }
        return probe;
    }

    static SinkRunProbe of(String runId) {
        SinkRunProbe probe = RUNS.get(runId);
        if (probe == null) {
            throw new IllegalStateException(
                    "no benchmark run "
                            + runId
                            + " in this JVM: the sink benchmark's jobs run on its own MiniCluster");
        }
        return probe;
    }

    static void unregister(String runId) {
        RUNS.remove(runId);
    }

    /** Called by subtask {@code subtask} for each record with its running count. */
    void setRecords(int subtask, long count) {
        records.lazySet(subtask * STRIDE, count);
    }

    /** Records handed to the sink so far, all subtasks. */
    long records() {
        long sum = 0;
        for (int i = 0; i < records.length(); i += STRIDE) {
            sum += records.get(i);
        }
        return sum;
    }

    void barrier(long checkpointId, long nanos) {
        barriers.merge(checkpointId, nanos, Math::max);
    }

    void checkpointComplete(long checkpointId) {
        lastCheckpointId.accumulateAndGet(checkpointId, Math::max);
    }

    /**
     * Whether a checkpoint whose barrier passed the probe after {@code nanos} has completed: then
     * every record counted before {@code nanos} was flushed (at least once) or committed (exactly
     * once). (With parallelism above 1 the barrier time is the latest subtask's that reported.)
     */
    boolean checkpointCompletedAfter(long nanos) {
        long last = lastCheckpointId.get();
        for (Map.Entry<Long, Long> e : barriers.entrySet()) {
            if (e.getValue() > nanos && e.getKey() <= last) {
                return true;
            }
        }
        return false;
    }

    /** The transaction {@code serial} of {@code transactionalId}, created on first use. */
    TxnTrace txn(String transactionalId, long serial) {
        return txns.computeIfAbsent(transactionalId + "#" + serial, k -> new TxnTrace());
    }

    List<TxnTrace> txns() {
        return new ArrayList<>(txns.values());
    }

    /**
     * One exactly-once transaction as the traced sink saw it: the generator indexes of its first
     * and last record, the checkpoint that prepared it, how long the writer's flush and prepare
     * took, and when the committer began and ended its commit ({@link System#nanoTime()}; 0 until
     * then).
     */
    static final class TxnTrace {
        volatile long firstIndex = -1;
        volatile long lastIndex = -1;
        volatile long checkpointId = -1;
        volatile long commitStartNanos;
        volatile long commitEndNanos;

        /** How long the writer's flush and then its prepareCommit took at the barrier. */
        volatile long flushNanos;

        volatile long prepareNanos;

        long records() {
            return firstIndex < 0 ? 0 : lastIndex - firstIndex + 1;
        }
    }
}
