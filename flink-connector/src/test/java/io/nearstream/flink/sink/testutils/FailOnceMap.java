package io.nearstream.flink.sink.testutils;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.CheckpointListener;

/**
 * Turns numbers into strings, slowly enough for checkpoints to happen while records flow, and fails
 * its task once: after {@code failAfter} records and at least one completed checkpoint, so the job
 * restarts from a checkpoint with transactions committed before it and others open or prepared
 * after it. The state is static (one job at a time per JVM); {@link #reset} before each job.
 */
public final class FailOnceMap extends RichMapFunction<Long, String> implements CheckpointListener {

    private static final AtomicInteger SEEN = new AtomicInteger();
    private static final AtomicBoolean CHECKPOINT_COMPLETED = new AtomicBoolean();

    /** Set by the one subtask that fails: parallel subtasks race for it, and only one may win. */
    private static final AtomicBoolean FAILED = new AtomicBoolean();

    private static volatile int failAfter;

    /** Arms the failure; {@code failAfter} < 0 never fails (only slows the records down). */
    public static void reset(int failAfter) {
        FailOnceMap.failAfter = failAfter;
        SEEN.set(0);
        CHECKPOINT_COMPLETED.set(false);
        FAILED.set(false);
    }

    public static boolean failed() {
        return FAILED.get();
    }

    @Override
    public String map(Long value) throws Exception {
        int seen = SEEN.incrementAndGet();
        if (failAfter >= 0
                && seen >= failAfter
                && CHECKPOINT_COMPLETED.get()
                && FAILED.compareAndSet(false, true)) {
            throw new RuntimeException("injected failure after " + seen + " records");
        }
        if (seen % 50 == 0) {
            Thread.sleep(1); // let checkpoints complete while records flow
        }
        return Long.toString(value);
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) {
        CHECKPOINT_COMPLETED.set(true);
    }
}
