package io.nearstream.flink.source.reader.push;

import io.nearstream.client.Position;
import io.nearstream.flink.source.reader.RecordRun;
import io.nearstream.jni.ArrowSlotView;
import java.lang.ref.Cleaner;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.annotation.Nullable;
import org.apache.arrow.memory.util.MemoryUtil;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.flink.annotation.Internal;
import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;

/**
 * One pushed slot handed to Flink without copying it on the fetcher thread: the loaded {@link
 * ArrowSlotView} plus, per split, the {@link RecordRun runs} of rows to emit (decided on the
 * fetcher thread from the slot's chunk map). The emitter copies each value out of the slot into a
 * {@code byte[]} on the task thread.
 *
 * <p>{@link #recycle()} hands the slot back to the broker (and the view to its pool) exactly once;
 * until then the slot stays taken, which is the push path's backpressure. A batch Flink drops
 * without recycling it is given back by a {@link Cleaner} once unreachable.
 */
@Internal
final class PushSlotRecords implements RecordsWithSplitIds<RecordRun> {

    /**
     * Rows {@code [firstRow, firstRow + count)} of the slot: records {@code firstIndex..} of the
     * chunk at {@code chunk} of {@code streamlet}. Decided on the fetcher thread before the batch
     * exists; the batch turns each into a {@link SlotRun} reading its rows.
     */
    record ChunkRun(
            int streamlet,
            Position chunk,
            long timestampMs,
            int firstRow,
            int firstIndex,
            int count) {}

    /** A run whose values are rows of this batch's slot. */
    private final class SlotRun extends RecordRun {
        private final int firstRow;

        SlotRun(ChunkRun run) {
            super(run.streamlet(), run.chunk(), run.timestampMs(), run.firstIndex(), run.count());
            this.firstRow = run.firstRow();
        }

        @Override
        public byte[] value(int i) {
            if (i < 0 || i >= size()) {
                throw new IndexOutOfBoundsException("record " + i + " of a run of " + size());
            }
            return copyRow(firstRow + i);
        }
    }

    private final VarBinaryVector values;

    /**
     * Where the column's offsets and data lie in the mapped slot. Per record: two int reads and one
     * bulk copy straight from these addresses, without the per-call bounds, reference-count and
     * byte-order checks of {@code ArrowBuf} or a {@code ByteBuffer} view (those cost more than the
     * copy of a 100-byte value). Safe because the view checked that both buffers lie inside the
     * slot when it loaded it, every run's rows are checked against {@code valueCount} when the
     * batch is built, every offset pair is checked against {@code dataBytes} below, and the slot
     * stays mapped until {@link #recycle()} (the reader never unmaps a region a queued batch may
     * read).
     */
    private final long offsetsAddress;

    private final long dataAddress;
    private final long dataBytes;
    private final boolean hasNulls;
    private final String[] splitIds;
    private final SlotRun[][] runsBySplit;
    private final Set<String> finishedSplits;
    private final Cleaner.Cleanable giveBack;

    private int split = -1;
    private int run;

    private PushSlotRecords(
            ArrowSlotView view,
            SlotViewPool pool,
            Map<String, List<ChunkRun>> runs,
            Set<String> finishedSplits) {
        this.values = view.vector();
        this.offsetsAddress = values.getOffsetBuffer().memoryAddress();
        this.dataAddress = values.getDataBuffer().memoryAddress();
        this.dataBytes = values.getDataBuffer().capacity();
        this.hasNulls = values.getNullCount() > 0;
        this.splitIds = runs.keySet().toArray(new String[0]);
        this.runsBySplit = new SlotRun[splitIds.length][];
        int rows = values.getValueCount();
        for (int i = 0; i < splitIds.length; i++) {
            List<ChunkRun> splitRuns = runs.get(splitIds[i]);
            runsBySplit[i] = new SlotRun[splitRuns.size()];
            for (int r = 0; r < splitRuns.size(); r++) {
                ChunkRun run = splitRuns.get(r);
                if (run.firstRow() < 0 || run.count() < 0 || run.firstRow() + run.count() > rows) {
                    throw new IllegalArgumentException(
                            "rows " + run.firstRow() + "+" + run.count() + " of a slot of " + rows);
                }
                runsBySplit[i][r] = new SlotRun(run);
            }
        }
        this.finishedSplits = finishedSplits;
        this.giveBack = pool.giveBackWhenUnreachable(this, view);
    }

    @Nullable
    @Override
    public String nextSplit() {
        if (split < splitIds.length) {
            split++;
        }
        run = 0;
        return split < splitIds.length ? splitIds[split] : null;
    }

    @Nullable
    @Override
    public RecordRun nextRecordFromSplit() {
        if (split < 0 || split >= splitIds.length) {
            return null;
        }
        SlotRun[] runs = runsBySplit[split];
        return run < runs.length ? runs[run++] : null;
    }

    /** Copies row {@code row}'s value out of the slot (an empty array for a null). */
    private byte[] copyRow(int row) {
        if (hasNulls && values.isNull(row)) {
            return new byte[0];
        }
        int start = offset(row);
        int end = offset(row + 1);
        if (start < 0 || end < start || end > dataBytes) {
            throw new IllegalStateException(
                    "row " + row + " has offsets " + start + ".." + end + " outside the slot");
        }
        byte[] value = new byte[end - start];
        MemoryUtil.copyFromMemory(dataAddress + start, value, 0, value.length);
        return value;
    }

    /** Arrow offsets are little-endian whatever the host's order (a constant for the JIT). */
    private int offset(int index) {
        int raw = MemoryUtil.getInt(offsetsAddress + (long) index * Integer.BYTES);
        return MemoryUtil.LITTLE_ENDIAN ? raw : Integer.reverseBytes(raw);
    }

    @Override
    public Set<String> finishedSplits() {
        return finishedSplits;
    }

    /** Hands the slot back to the broker; later calls do nothing. */
    @Override
    public void recycle() {
        giveBack.clean();
    }

    /** Collects a slot's runs on the fetcher thread (one entry per chunk, never per record). */
    static final class Builder {
        private final Map<String, List<ChunkRun>> runs = new LinkedHashMap<>();
        private final Set<String> finished = new LinkedHashSet<>();
        private long records;

        void add(String splitId, ChunkRun run) {
            runs.computeIfAbsent(splitId, k -> new ArrayList<>(2)).add(run);
            records += run.count();
        }

        void addFinishedSplit(String splitId) {
            finished.add(splitId);
        }

        boolean hasRecords() {
            return records > 0;
        }

        long records() {
            return records;
        }

        Set<String> finishedSplits() {
            return finished;
        }

        /** The batch owns {@code view} (and its slot) from here on. */
        PushSlotRecords build(ArrowSlotView view, SlotViewPool pool) {
            return new PushSlotRecords(view, pool, runs, finished);
        }
    }
}
