package io.nearstream.jni;

import static io.nearstream.jni.ShmLayout.*;

import java.io.UncheckedIOException;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ForeignAllocation;
import org.apache.arrow.vector.BitVectorHelper;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.message.ArrowFieldNode;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * A published slot as an Arrow record batch, without a copy: the slot's payload is wrapped with
 * {@link BufferAllocator#wrapForeignAllocation} and its validity, offsets and data buffers (slices
 * of it) are loaded into one reused {@link VectorSchemaRoot} holding a single {@link
 * VarBinaryVector} ({@value #FIELD}).
 *
 * <p>Ownership: the slot goes back to the broker ({@link SlotRing#release}) when the last reference
 * to any of its buffers is released, i.e. when the next {@link #load} replaces it, on {@link
 * #clear()} or {@link #close()} - or later, if the caller transferred a vector elsewhere. The
 * allocator accounts {@code slot_bytes} per held slot. The view is single-threaded; the release
 * itself may run on whichever thread drops the last reference.
 */
public final class ArrowSlotView implements AutoCloseable {
    /** The name of the one column. */
    public static final String FIELD = "value";

    /** {@code value: binary (nullable)}. */
    public static final Schema SCHEMA =
            new Schema(List.of(Field.nullable(FIELD, ArrowType.Binary.INSTANCE)));

    private final BufferAllocator allocator;
    private final VectorSchemaRoot root;
    private final VarBinaryVector vector;
    private final VectorLoader loader;
    private final AtomicBoolean closed = new AtomicBoolean();

    /** Creates a view whose buffers are accounted to a child of {@code parent}. */
    public ArrowSlotView(BufferAllocator parent) {
        this.allocator = parent.newChildAllocator("nearstream-slot-view", 0, Long.MAX_VALUE);
        this.root = VectorSchemaRoot.create(SCHEMA, allocator);
        this.vector = (VarBinaryVector) root.getVector(0);
        this.loader = new VectorLoader(root);
    }

    /**
     * Loads the slot of {@code position}, which the caller took with {@link SlotRing#tryNext()} and
     * has not released; from now on the view owns that release. The slot loaded before is released
     * (unless its buffers are still referenced elsewhere).
     *
     * @return the reused root, {@code rowCount} = the slot's row count
     * @throws IllegalStateException when the descriptor does not describe a valid batch, or the
     *     region is already unmapped (the slot is then not released)
     */
    public VectorSchemaRoot load(SlotRing ring, long position) {
        if (closed.get()) {
            throw new IllegalStateException("ArrowSlotView is closed");
        }
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
        ShmRegion region = ring.region();
        if (!region.retain()) {
            throw new IllegalStateException("push region " + region.path() + " is closed");
        }
        ArrowBuf whole;
        try {
            whole =
                    allocator.wrapForeignAllocation(
                            new SlotAllocation(
                                    ring, position, ring.payloadAddress(position), slotBytes));
        } catch (RuntimeException e) {
            region.releaseRef();
            throw e;
        }
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
        return root;
    }

    private static boolean inside(int offset, int length, int slotBytes) {
        return offset >= 0 && length >= 0 && (long) offset + length <= slotBytes;
    }

    /** The reused root (one {@link VarBinaryVector}). */
    public VectorSchemaRoot root() {
        return root;
    }

    /** The column of the loaded slot. */
    public VarBinaryVector vector() {
        return vector;
    }

    /** The allocator this view's buffers are accounted to. */
    public BufferAllocator allocator() {
        return allocator;
    }

    /** Drops the loaded slot's buffers: the slot is released unless referenced elsewhere. */
    public void clear() {
        root.clear();
    }

    /** Releases the loaded slot and closes the child allocator; idempotent. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            root.close();
            allocator.close();
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
}
