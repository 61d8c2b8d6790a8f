package io.nearstream.benchmarks.sink;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;

/**
 * Chained between the generator and the sink in every benchmark job: counts the records it hands on
 * (published to the run's {@link SinkRunProbe}), and notes when each checkpoint's barrier passed it
 * and which checkpoints completed. Operators of a chain hear of a completed checkpoint from the
 * tail (the sink's committer) to the head, so its completion time comes after the committer's
 * commit: it only says that a checkpoint completed.
 */
final class ProbeFunction extends RichMapFunction<byte[], byte[]>
        implements CheckpointListener, CheckpointedFunction {

    private static final long serialVersionUID = 1L;

    private final String runId;
    private transient SinkRunProbe probe;
    private transient int subtask;
    private transient long count;

    ProbeFunction(String runId) {
        this.runId = runId;
    }

    @Override
    public void open(OpenContext context) {
        probe = SinkRunProbe.of(runId);
        subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
    }

    @Override
    public byte[] map(byte[] record) {
        probe.setRecords(subtask, ++count);
        return record;
    }

    /** The barrier passes here after every record counted so far (one task thread does both). */
    @Override
    public void snapshotState(FunctionSnapshotContext context) {
        probe.barrier(context.getCheckpointId(), System.nanoTime());
    }

    @Override
    public void initializeState(FunctionInitializationContext context) {}

    @Override
    public void notifyCheckpointComplete(long checkpointId) {
        probe.checkpointComplete(checkpointId);
    }
}
