package io.nearstream.flink.source.reader.push;

import io.nearstream.client.Position;
import io.nearstream.flink.source.reader.RecordRun;
import io.nearstream.jni.ArrowSlotView;
import io.nearstream.jni.ShmLayout;
import java.lang.ref.Cleaner;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.annotation.Nullable;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.util.MemoryUtil;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.ViewVarBinaryVector;
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

    /** The loaded column: a {@code VarBinaryVector} or, for a view slot, a view vector. */
    private final FieldVector values;

    private final boolean views;

    /**
     * Where the column's buffers lie in mapped memory. Per record: two int reads (binary) or one
     * 16-byte view (views) and one bulk copy straight from these addresses, without the per-call
     * bounds, reference-count and byte-order checks of {@code ArrowBuf} or a {@code ByteBuffer}
     * view (those cost more than the copy of a 100-byte value). Safe because the view checked that
     * the slot's buffers lie inside the slot and that every segment file is mapped for its {@code
     * file_bytes} when it loaded it, every run's rows are checked against {@code valueCount} when
     * the batch is built, every offset pair or view is checked against its buffer below, and the
     * slot and its segment file mappings stay mapped until {@link #recycle()} (the reader never
     * unmaps a region or a segment file a queued batch may read).
     */
    private final long offsetsAddress;

    private final long dataAddress;
    private final long dataBytes;

    /** View slots: variadic buffer k's address and length (0: the slot's data, k: a file). */
    private final long[] bufferAddresses;

    private final long[] bufferBytes;
    private final long position;
    private final boolean hasNulls;
    private final String[] splitIds;
    private final SlotRun[][] runsBySplit;
    private final Set<String> finishedSplits;
    private final Cleaner.Cleanable giveBack;

    private int split = -1;
    private int run;

    private PushSlotRecords(
            ArrowSlotView view,
            long position,
            SlotViewPool pool,
            Map<String, List<ChunkRun>> runs,
            Set<String> finishedSplits) {
        this.views = view.isView();
        this.position = position;
        if (views) {
            ViewVarBinaryVector v = view.viewVector();
            this.values = v;
            this.offsetsAddress = v.getDataBuffer().memoryAddress(); // the views
            this.dataAddress = 0;
            this.dataBytes = 0;
            List<ArrowBuf> buffers = v.getDataBuffers();
            this.bufferAddresses = new long[buffers.size()];
            this.bufferBytes = new long[buffers.size()];
            for (int k = 0; k < buffers.size(); k++) {
                bufferAddresses[k] = buffers.get(k).memoryAddress();
                bufferBytes[k] = buffers.get(k).capacity();
            }
        } else {
            VarBinaryVector v = view.vector();
            this.values = v;
            this.offsetsAddress = v.getOffsetBuffer().memoryAddress();
            this.dataAddress = v.getDataBuffer().memoryAddress();
            this.dataBytes = v.getDataBuffer().capacity();
            this.bufferAddresses = null;
            this.bufferBytes = null;
        }
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
        if (views) {
            return copyViewRow(row);
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

    /**
     * Copies row {@code row} of a view slot: from the view itself (at most 12 bytes) or from the
     * buffer it names, after checking that the buffer exists and holds the whole value.
     */
    private byte[] copyViewRow(int row) {
        long view = offsetsAddress + (long) row * ShmLayout.VIEW_BYTES;
        int length = littleEndianInt(view);
        if (length < 0) {
            throw badView(row, "has length " + length);
        }
        byte[] value = new byte[length];
        if (length <= ShmLayout.VIEW_INLINE_BYTES) {
            MemoryUtil.copyFromMemory(view + 4, value, 0, length);
            return value;
        }
        int buffer = littleEndianInt(view + 8);
        int offset = littleEndianInt(view + 12);
        if (buffer < 0 || buffer >= bufferAddresses.length) {
            throw badView(row, "names buffer " + buffer + " of " + bufferAddresses.length);
        }
        if (offset < 0 || (long) offset + length > bufferBytes[buffer]) {
            throw badView(
                    row,
                    "has bytes "
                            + offset
                            + ".."
                            + ((long) offset + length)
                            + " outside its buffer "
                            + buffer
                            + " of "
                            + bufferBytes[buffer]
                            + " bytes");
        }
        MemoryUtil.copyFromMemory(bufferAddresses[buffer] + offset, value, 0, length);
        return value;
    }

    private IllegalStateException badView(int row, String what) {
        return new IllegalStateException(
                "slot " + position + ": the view of row " + row + " " + what);
    }

    /** Arrow offsets are little-endian whatever the host's order (a constant for the JIT). */
    private int offset(int index) {
        return littleEndianInt(offsetsAddress + (long) index * Integer.BYTES);
    }

    private static int littleEndianInt(long address) {
        int raw = MemoryUtil.getInt(address);
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

        /** The batch owns {@code view} (its slot at {@code position}) from here on. */
        PushSlotRecords build(ArrowSlotView view, long position, SlotViewPool pool) {
            return new PushSlotRecords(view, position, pool, runs, finished);
        }
    }
}
