package io.nearstream.jni;

import static io.nearstream.jni.ShmLayout.*;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ForeignAllocation;
import org.apache.arrow.vector.BitVectorHelper;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ViewVarBinaryVector;
import org.apache.arrow.vector.ipc.message.ArrowFieldNode;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * A published slot as an Arrow record batch, without a copy: the slot's payload is wrapped with
 * {@link BufferAllocator#wrapForeignAllocation} and its buffers (slices of it) are loaded into one
 * of two reused {@link VectorSchemaRoot}s, by the region's slot format: a {@code binary} slot as a
 * {@link VarBinaryVector} (validity, offsets, data), a {@code binary_view} slot as a {@link
 * ViewVarBinaryVector} (validity, views, then the variadic buffers: the slot's data area and one
 * read-only segment file mapping per buffer-table entry, docs/shm-layout.md "View slots").
 *
 * <p>Ownership: the slot goes back to the broker ({@link SlotRing#release}) when the last reference
 * to any of its buffers is released, i.e. when the next {@link #load} replaces it, on {@link
 * #clear()} or {@link #close()} - or later, if the caller transferred a vector elsewhere. Each
 * segment file buffer holds one reference to its region's {@link SegmentFileMappings} entry and
 * drops it with the same release, so a mapping stays while any held slot may read through it. The
 * allocator accounts {@code slot_bytes} per held slot plus {@code file_bytes} per segment file
 * buffer. The view is single-threaded; the release itself may run on whichever thread drops the
 * last reference.
 */
public final class ArrowSlotView implements AutoCloseable {
    /** The name of the one column. */
    public static final String FIELD = "value";

    /** {@code value: binary (nullable)}. */
    public static final Schema SCHEMA =
            new Schema(List.of(Field.nullable(FIELD, ArrowType.Binary.INSTANCE)));

    /** {@code value: binary_view (nullable)}, the schema of a {@code binary_view} slot. */
    public static final Schema VIEW_SCHEMA =
            new Schema(List.of(Field.nullable(FIELD, ArrowType.BinaryView.INSTANCE)));

    private final BufferAllocator allocator;
    private final VectorSchemaRoot root;
    private final VarBinaryVector vector;
    private final VectorLoader loader;
    private final VectorSchemaRoot viewRoot;
    private final ViewVarBinaryVector viewVector;
    private final AtomicBoolean closed = new AtomicBoolean();
    private boolean viewLoaded;

    /** Creates a view whose buffers are accounted to a child of {@code parent}. */
    public ArrowSlotView(BufferAllocator parent) {
        this.allocator = parent.newChildAllocator("nearstream-slot-view", 0, Long.MAX_VALUE);
        this.root = VectorSchemaRoot.create(SCHEMA, allocator);
        this.vector = (VarBinaryVector) root.getVector(0);
        this.loader = new VectorLoader(root);
        this.viewRoot = VectorSchemaRoot.create(VIEW_SCHEMA, allocator);
        this.viewVector = (ViewVarBinaryVector) viewRoot.getVector(0);
    }

    /**
     * Loads the slot of {@code position}, which the caller took with {@link SlotRing#tryNext()} and
     * has not released; from now on the view owns that release. The slot loaded before is released
     * (unless its buffers are still referenced elsewhere).
     *
     * @return the reused root of the region's slot format, {@code rowCount} = the slot's row count
     * @throws IllegalStateException when the descriptor does not describe a valid batch, or the
     *     region is already unmapped (the slot is then not released)
     * @throws UncheckedIOException when a segment file of a view slot cannot be mapped (the slot is
     *     then not released)
     */
    public VectorSchemaRoot load(SlotRing ring, long position) {
        if (closed.get()) {
            throw new IllegalStateException("ArrowSlotView is closed");
        }
        if (ring.region().slotFormat() == SLOT_FORMAT_BINARY_VIEW) {
            root.clear();
            loadViews(ring, position);
            viewLoaded = true;
            return viewRoot;
        }
        viewRoot.clear();
        loadBinary(ring, position);
        viewLoaded = false;
        return root;
    }

    private void loadBinary(SlotRing ring, long position) {
        int slotBytes = ring.slotBytes();
        int rows = ring.rowCount(position);
        int validityOffset = ring.descriptorInt(position, DESC_VALIDITY_OFFSET);
        int validityLength = ring.descriptorInt(position, DESC_VALIDITY_LENGTH);
        int offsetsOffset = ring.descriptorInt(position, DESC_OFFSETS_OFFSET);
        int offsetsLength = ring.descriptorInt(position, DESC_OFFSETS_LENGTH);
        int dataOffset = ring.descriptorInt(position, DESC_DATA_OFFSET);
        int dataLength = ring.descriptorInt(position, DESC_DATA_LENGTH);
        if (rows < 0
                || !inside(validityOffset, validityLength, slotBytes)
                || !inside(offsetsOffset, offsetsLength, slotBytes)
                || !inside(dataOffset, dataLength, slotBytes)
                || validityLength < (rows + 7) / 8
                || offsetsLength < (rows + 1) * 4L) {
            throw new IllegalStateException(
                    String.format(
                            "slot %d of ring %d: descriptor out of bounds (rows %d, validity %d+%d,"
                                    + " offsets %d+%d, data %d+%d, slot_bytes %d)",
                            position,
                            ring.index(),
                            rows,
                            validityOffset,
                            validityLength,
                            offsetsOffset,
                            offsetsLength,
                            dataOffset,
                            dataLength,
                            slotBytes));
        }
        ArrowBuf whole = wrapSlot(ring, position);
        // From here the slot is released through SlotAllocation.release0 whatever happens.
        try {
            ArrowBuf validity = whole.slice(validityOffset, validityLength);
            ArrowBuf offsets = whole.slice(offsetsOffset, offsetsLength);
            ArrowBuf data = whole.slice(dataOffset, dataLength);
            int nullCount = rows == 0 ? 0 : BitVectorHelper.getNullCount(validity, rows);
            try (ArrowRecordBatch batch =
                    new ArrowRecordBatch(
                            rows,
                            List.of(new ArrowFieldNode(rows, nullCount)),
                            List.of(validity, offsets, data))) {
                loader.load(batch);
            }
        } finally {
            whole.close();
        }
    }

    /**
     * A {@code binary_view} slot: checks that validity, views, data and buffer table lie inside the
     * slot, maps (or finds mapped) every segment file of the buffer table, and loads the vector.
     * The views themselves are not checked here (that would read every row on the fetcher thread):
     * a reader checks each view against its buffer before it reads through it, as Arrow's own
     * accessors do.
     */
    private void loadViews(SlotRing ring, long position) {
        int slotBytes = ring.slotBytes();
        int rows = ring.rowCount(position);
        int validityOffset = ring.descriptorInt(position, DESC_VALIDITY_OFFSET);
        int validityLength = ring.descriptorInt(position, DESC_VALIDITY_LENGTH);
        int viewsOffset = ring.descriptorInt(position, DESC_OFFSETS_OFFSET);
        int viewsLength = ring.descriptorInt(position, DESC_OFFSETS_LENGTH);
        int dataOffset = ring.descriptorInt(position, DESC_DATA_OFFSET);
        int dataLength = ring.descriptorInt(position, DESC_DATA_LENGTH);
        int buffersOffset = ring.descriptorInt(position, DESC_BUFFERS_OFFSET);
        int buffersLength = ring.descriptorInt(position, DESC_BUFFERS_LENGTH);
        if (rows < 0
                || !inside(validityOffset, validityLength, slotBytes)
                || !inside(viewsOffset, viewsLength, slotBytes)
                || !inside(dataOffset, dataLength, slotBytes)
                || !inside(buffersOffset, buffersLength, slotBytes)
                || validityLength < (rows + 7) / 8
                || viewsLength < (long) rows * VIEW_BYTES
                || buffersLength % BUFFER_TABLE_ENTRY_BYTES != 0) {
            throw new IllegalStateException(
                    String.format(
                            "slot %d of ring %d: view descriptor out of bounds (rows %d, validity"
                                    + " %d+%d, views %d+%d, data %d+%d, buffers %d+%d, slot_bytes"
                                    + " %d)",
                            position,
                            ring.index(),
                            rows,
                            validityOffset,
                            validityLength,
                            viewsOffset,
                            viewsLength,
                            dataOffset,
                            dataLength,
                            buffersOffset,
                            buffersLength,
                            slotBytes));
        }
        int bufferCount = buffersLength / BUFFER_TABLE_ENTRY_BYTES;
        SegmentFileMappings files = ring.region().segmentFiles();
        int table = ring.payloadOffset(position) + buffersOffset;
        List<ArrowBuf> segmentBuffers = new ArrayList<>(bufferCount);
        try {
            // Segment files first: a file that cannot be mapped fails the load before the slot
            // is wrapped, so the slot stays taken (not released), as for a bad descriptor.
            for (int k = 0; k < bufferCount; k++) {
                int entry = table + k * BUFFER_TABLE_ENTRY_BYTES;
                long number = ring.buffer().getLong(entry + BUFFER_SEGMENT_FILE);
                long fileBytes =
                        Integer.toUnsignedLong(ring.buffer().getInt(entry + BUFFER_FILE_BYTES));
                SegmentFileMappings.Mapping m;
                try {
                    m = files.acquire(number, fileBytes);
                } catch (IOException e) {
                    throw new UncheckedIOException(
                            String.format(
                                    "slot %d of ring %d: buffer %d (segment file %d, %d bytes)",
                                    position, ring.index(), k + 1, number, fileBytes),
                            e);
                }
                try {
                    segmentBuffers.add(
                            allocator.wrapForeignAllocation(
                                    new SegmentFileAllocation(files, m, fileBytes)));
                } catch (RuntimeException e) {
                    files.release(m);
                    throw e;
                }
            }
            ArrowBuf whole = wrapSlot(ring, position);
            // From here the slot is released through SlotAllocation.release0 whatever happens.
            try {
                ArrowBuf validity = whole.slice(validityOffset, validityLength);
                List<ArrowBuf> buffers = new ArrayList<>(3 + bufferCount);
                buffers.add(validity);
                buffers.add(whole.slice(viewsOffset, viewsLength));
                buffers.add(whole.slice(dataOffset, dataLength));
                buffers.addAll(segmentBuffers);
                int nullCount = rows == 0 ? 0 : BitVectorHelper.getNullCount(validity, rows);
                // Takes its own reference to each buffer (and releases the previous slot's).
                viewVector.loadFieldBuffers(new ArrowFieldNode(rows, nullCount), buffers);
                viewRoot.setRowCount(rows);
            } finally {
                whole.close();
            }
        } finally {
            // Our own references: the vector holds its own now (or, after a failure, nothing
            // does, and the last close releases the mapping reference).
            for (ArrowBuf b : segmentBuffers) {
                b.close();
            }
        }
    }

    /** Wraps the slot's payload; its release0 hands the slot back and drops the region ref. */
    private ArrowBuf wrapSlot(SlotRing ring, long position) {
        ShmRegion region = ring.region();
        if (!region.retain()) {
            throw new IllegalStateException("push region " + region.path() + " is closed");
        }
        try {
            return allocator.wrapForeignAllocation(
                    new SlotAllocation(
                            ring, position, ring.payloadAddress(position), ring.slotBytes()));
        } catch (RuntimeException e) {
            region.releaseRef();
            throw e;
        }
    }

    private static boolean inside(int offset, int length, int slotBytes) {
        return offset >= 0 && length >= 0 && (long) offset + length <= slotBytes;
    }

    /** The reused root of the slot loaded last (of a binary slot before any load). */
    public VectorSchemaRoot root() {
        return viewLoaded ? viewRoot : root;
    }

    /** Whether the slot loaded last is a {@code binary_view} slot ({@link #viewVector()}). */
    public boolean isView() {
        return viewLoaded;
    }

    /** The column of the slot loaded last, whichever its format. */
    public FieldVector column() {
        return viewLoaded ? viewVector : vector;
    }

    /** Rows of the slot loaded last. */
    public int rowCount() {
        return column().getValueCount();
    }

    /**
     * The column of the loaded {@code binary} slot.
     *
     * @throws IllegalStateException when the slot loaded last is a {@code binary_view} slot
     */
    public VarBinaryVector vector() {
        if (viewLoaded) {
            throw new IllegalStateException("a binary_view slot is loaded: use viewVector()");
        }
        return vector;
    }

    /**
     * The column of the loaded {@code binary_view} slot: data buffer 0 is the slot's data area,
     * data buffer {@code k >= 1} the segment file of buffer-table entry {@code k - 1}.
     *
     * @throws IllegalStateException when the slot loaded last is a {@code binary} slot
     */
    public ViewVarBinaryVector viewVector() {
        if (!viewLoaded) {
            throw new IllegalStateException("a binary slot is loaded: use vector()");
        }
        return viewVector;
    }

    /** The allocator this view's buffers are accounted to. */
    public BufferAllocator allocator() {
        return allocator;
    }

    /** Drops the loaded slot's buffers: the slot is released unless referenced elsewhere. */
    public void clear() {
        try {
            root.clear();
        } finally {
            viewRoot.clear();
        }
    }

    /** Releases the loaded slot and closes the child allocator; idempotent. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                root.close();
                viewRoot.close();
            } finally {
                allocator.close();
            }
        }
    }

    /** The slot's payload as Arrow sees it; {@link #release0} hands the slot back. */
    private static final class SlotAllocation extends ForeignAllocation {
        private final SlotRing ring;
        private final long position;

        SlotAllocation(SlotRing ring, long position, long address, long size) {
            super(size, address);
            this.ring = ring;
            this.position = position;
        }

        @Override
        protected void release0() {
            try {
                ring.release(position);
            } catch (NativeException e) {
                throw new UncheckedIOException(e);
            } finally {
                ring.region().releaseRef();
            }
        }
    }

    /**
     * A segment file mapping as Arrow sees it: {@link #release0} drops this buffer's reference to
     * the mapping (never unmaps: the mappings decide that, {@link SegmentFileMappings}).
     */
    private static final class SegmentFileAllocation extends ForeignAllocation {
        private final SegmentFileMappings files;
        private final SegmentFileMappings.Mapping mapping;

        SegmentFileAllocation(
                SegmentFileMappings files, SegmentFileMappings.Mapping mapping, long size) {
            super(size, mapping.address());
            this.files = files;
            this.mapping = mapping;
        }

        @Override
        protected void release0() {
            files.release(mapping);
        }
    }
}
