package io.nearstream.flink.source.testutils;

import static io.nearstream.jni.ShmLayout.*;

import io.nearstream.client.Position;
import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;

/**
 * The broker's side of a push region in plain Java, for reader tests: writes the header of
 * docs/shm-layout.md (magic last), activates rings, publishes slots of whole chunks (Arrow
 * VarBinary batch + chunk map, then the release store of the sequence word) and plays the broker's
 * failures (stale heartbeat, epoch change, region closed, ring reclaimed). It never futex-wakes:
 * readers wait with a bounded timeout, so they notice a slot within one wait.
 */
public final class PushTestRegion {
    private static final VarHandle LONG =
            MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle INT =
            MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

    /** A chunk as the broker pushes it: its streamlet, position, size in the segment, records. */
    public record Chunk(int streamlet, Position at, int chunkBytes, List<byte[]> records) {}

    private final MappedByteBuffer buf;
    private final int slots;
    private final int slotBytes;
    private final long[] next;

    private PushTestRegion(MappedByteBuffer buf, int rings, int slots, int slotBytes) {
        this.buf = buf;
        this.slots = slots;
        this.slotBytes = slotBytes;
        this.next = new long[rings];
    }

    /** Creates the file with every ring active (ring {@code i} for subtask {@code subtasks[i]}). */
    public static PushTestRegion create(
            Path path, long epoch, int slots, int slotBytes, int... subtasks) throws IOException {
        return create(path, epoch, slots, slotBytes, null, subtasks);
    }

    /**
     * As {@link #create}, a {@code binary_view} region whose segment files are {@code
     * segmentFilePrefix + n} next to {@code path} ({@link #publishViews}).
     */
    public static PushTestRegion createView(
            Path path, long epoch, int slots, int slotBytes, String prefix, int... subtasks)
            throws IOException {
        return create(path, epoch, slots, slotBytes, prefix, subtasks);
    }

    private static PushTestRegion create(
            Path path, long epoch, int slots, int slotBytes, String prefix, int... subtasks)
            throws IOException {
        int rings = subtasks.length;
        long length = regionBytes(rings, slots, slotBytes);
        MappedByteBuffer buf;
        try (FileChannel ch =
                FileChannel.open(
                        path,
                        StandardOpenOption.CREATE,
                        StandardOpenOption.READ,
                        StandardOpenOption.WRITE)) {
            ch.truncate(0);
            buf = ch.map(FileChannel.MapMode.READ_WRITE, 0, length);
        }
        buf.order(ByteOrder.LITTLE_ENDIAN);
        PushTestRegion r = new PushTestRegion(buf, rings, slots, slotBytes);
        buf.putInt(REGION_LAYOUT_VERSION, LAYOUT_VERSION);
        buf.putInt(REGION_HEADER_BYTES, HEADER_BYTES);
        buf.putInt(REGION_RING_COUNT, rings);
        buf.putInt(REGION_SLOTS_PER_RING, slots);
        buf.putInt(REGION_SLOT_BYTES, slotBytes);
        buf.putInt(REGION_DESCRIPTOR_BYTES, DESCRIPTOR_BYTES);
        buf.putInt(REGION_RING_HEADER_BYTES, RING_HEADER_BYTES);
        buf.putInt(REGION_PAYLOAD_OFFSET, (int) payloadOffset(slots));
        buf.putLong(REGION_RING_STRIDE, ringStride(slots, slotBytes));
        buf.putLong(REGION_REGION_BYTES, length);
        buf.putLong(REGION_BROKER_EPOCH, epoch);
        buf.putInt(REGION_STATE, REGION_OPEN);
        if (prefix != null) {
            buf.putInt(REGION_SLOT_FORMAT, SLOT_FORMAT_BINARY_VIEW);
            buf.put(REGION_SEGMENT_FILE_PREFIX, prefix.getBytes(StandardCharsets.US_ASCII));
        }
        r.heartbeat();
        for (int i = 0; i < rings; i++) {
            r.activate(i, subtasks[i]);
        }
        LONG.setRelease(buf, REGION_MAGIC, MAGIC);
        return r;
    }

    private int ring(int i) {
        return HEADER_BYTES + (int) (i * ringStride(slots, slotBytes));
    }

    private int descriptor(int ring, long pos) {
        return ring(ring) + RING_HEADER_BYTES + (int) (pos % slots) * DESCRIPTOR_BYTES;
    }

    private int payload(int ring, long pos) {
        return ring(ring) + (int) payloadOffset(slots) + (int) (pos % slots) * slotBytes;
    }

    /** Activates ring {@code i} for a new generation starting at position 0. */
    public void activate(int i, int subtask) {
        int r = ring(i);
        buf.putInt(r + RING_ID, i);
        buf.putInt(r + RING_SUBTASK_INDEX, subtask);
        buf.putInt(r + RING_GENERATION, buf.getInt(r + RING_GENERATION) + 1);
        buf.putLong(r + RING_BASE_POSITION, 0);
        buf.putLong(r + RING_PUBLISHED, 0);
        buf.putLong(r + RING_RELEASED, 0);
        // As the broker's activation: the grace period a new consumer has to attach.
        buf.putLong(r + RING_CONSUMER_HEARTBEAT_NS, System.nanoTime());
        for (long p = 0; p < slots; p++) {
            buf.putLong(descriptor(i, p) + DESC_SEQUENCE, p);
        }
        next[i] = 0;
        INT.setRelease(buf, r + RING_STATE, RING_ACTIVE);
    }

    /** The broker reclaims ring {@code i} (its consumer is considered dead). */
    public void reclaim(int i) {
        INT.setRelease(buf, ring(i) + RING_STATE, RING_RECLAIMED);
    }

    public void heartbeat() {
        LONG.setRelease(buf, REGION_BROKER_HEARTBEAT_NS, System.nanoTime());
    }

    public void setHeartbeat(long nanos) {
        LONG.setRelease(buf, REGION_BROKER_HEARTBEAT_NS, nanos);
    }

    public void setEpoch(long epoch) {
        LONG.setRelease(buf, REGION_BROKER_EPOCH, epoch);
    }

    public void closeRegion() {
        INT.setRelease(buf, REGION_STATE, REGION_CLOSED);
    }

    /** The consumer's last heartbeat on ring {@code i} (System.nanoTime()). */
    public long consumerHeartbeat(int i) {
        return (long) LONG.getAcquire(buf, ring(i) + RING_CONSUMER_HEARTBEAT_NS);
    }

    /** Slots of ring {@code i} the consumer released so far. */
    public long released(int i) {
        return (long) LONG.getAcquire(buf, ring(i) + RING_RELEASED);
    }

    /** True when the next slot of ring {@code i} is free (the consumer released it). */
    public boolean nextSlotFree(int i) {
        long pos = next[i];
        return (long) LONG.getAcquire(buf, descriptor(i, pos) + DESC_SEQUENCE) == pos;
    }

    /** Publishes one slot of ring {@code i} holding {@code chunks}; the slot must be free. */
    public void publish(int i, Chunk... chunks) {
        publish(i, -1, 0, chunks);
    }

    /**
     * As {@link #publish(int, Chunk...)}, but with Arrow offset {@code badRow} set to {@code
     * badOffset} (a broken or hostile broker): the reader must refuse it, not read outside the
     * slot. A negative {@code badRow} writes every offset right.
     */
    public void publish(int i, int badRow, int badOffset, Chunk... chunks) {
        if (!nextSlotFree(i)) {
            throw new IllegalStateException("slot of position " + next[i] + " is not free");
        }
        long pos = next[i]++;
        int p = payload(i, pos);
        int rows = 0;
        for (Chunk c : chunks) {
            rows += c.records().size();
        }
        int validityLength = align((rows + 7) / 8);
        int offsetsOffset = validityLength;
        int offsetsLength = (rows + 1) * 4;
        int dataOffset = offsetsOffset + align(offsetsLength);
        for (int b = 0; b < validityLength; b++) {
            buf.put(p + b, (byte) 0);
        }
        int row = 0;
        int cursor = 0;
        for (Chunk c : chunks) {
            for (byte[] v : c.records()) {
                buf.putInt(p + offsetsOffset + row * 4, cursor);
                buf.put(p + row / 8, (byte) (buf.get(p + row / 8) | (1 << (row % 8))));
                buf.put(p + dataOffset + cursor, v);
                cursor += v.length;
                row++;
            }
        }
        buf.putInt(p + offsetsOffset + rows * 4, cursor);
        if (badRow >= 0) {
            buf.putInt(p + offsetsOffset + badRow * 4, badOffset);
        }
        int chunkMapOffset = dataOffset + align(cursor);
        int d = descriptor(i, pos);
        writeChunkMapAndDescriptor(p, d, rows, chunkMapOffset, chunks);
        buf.putInt(d + DESC_VALIDITY_OFFSET, 0);
        buf.putInt(d + DESC_VALIDITY_LENGTH, validityLength);
        buf.putInt(d + DESC_OFFSETS_OFFSET, offsetsOffset);
        buf.putInt(d + DESC_OFFSETS_LENGTH, offsetsLength);
        buf.putInt(d + DESC_DATA_OFFSET, dataOffset);
        buf.putInt(d + DESC_DATA_LENGTH, cursor);
        publishSequence(i, pos);
    }

    /**
     * Publishes one {@code binary_view} slot of ring {@code i} holding {@code chunks}: a record of
     * at most 12 bytes inline, a longer one in segment file 1 where {@code segmentFile1} (its
     * contents, null for none) holds it, else copied into the slot (buffer 0). When {@code badRow}
     * is not negative, that row's view names {@code badBuffer} at {@code badOffset} instead (a
     * broken or hostile broker).
     */
    public void publishViews(
            int i, byte[] segmentFile1, int badRow, int badBuffer, int badOffset, Chunk... chunks) {
        if (!nextSlotFree(i)) {
            throw new IllegalStateException("slot of position " + next[i] + " is not free");
        }
        long pos = next[i]++;
        int p = payload(i, pos);
        int rows = 0;
        for (Chunk c : chunks) {
            rows += c.records().size();
        }
        int validityLength = align((rows + 7) / 8);
        int viewsOffset = validityLength;
        int dataOffset = viewsOffset + align(rows * VIEW_BYTES);
        for (int b = 0; b < validityLength; b++) {
            buf.put(p + b, (byte) 0);
        }
        String file =
                segmentFile1 == null ? "" : new String(segmentFile1, StandardCharsets.ISO_8859_1);
        int row = 0;
        int cursor = 0;
        for (Chunk c : chunks) {
            for (byte[] v : c.records()) {
                int view = p + viewsOffset + row * VIEW_BYTES;
                buf.put(p + row / 8, (byte) (buf.get(p + row / 8) | (1 << (row % 8))));
                buf.put(view, new byte[VIEW_BYTES]);
                buf.putInt(view, v.length);
                if (v.length <= VIEW_INLINE_BYTES) {
                    buf.put(view + 4, v);
                } else {
                    buf.put(view + 4, v, 0, 4);
                    int at = file.indexOf(new String(v, StandardCharsets.ISO_8859_1));
                    if (at >= 0) {
                        buf.putInt(view + 8, 1);
                        buf.putInt(view + 12, at);
                    } else {
                        buf.put(p + dataOffset + cursor, v);
                        buf.putInt(view + 8, 0);
                        buf.putInt(view + 12, cursor);
                        cursor += v.length;
                    }
                }
                if (row == badRow) {
                    buf.putInt(view + 8, badBuffer);
                    buf.putInt(view + 12, badOffset);
                }
                row++;
            }
        }
        int buffersOffset = dataOffset + align(cursor);
        int buffersLength = segmentFile1 == null ? 0 : BUFFER_TABLE_ENTRY_BYTES;
        if (segmentFile1 != null) {
            buf.putLong(p + buffersOffset + BUFFER_SEGMENT_FILE, 1);
            buf.putInt(p + buffersOffset + BUFFER_FILE_BYTES, segmentFile1.length);
            buf.putInt(p + buffersOffset + 12, 0);
        }
        int chunkMapOffset = buffersOffset + align(buffersLength);
        int d = descriptor(i, pos);
        writeChunkMapAndDescriptor(p, d, rows, chunkMapOffset, chunks);
        buf.putInt(d + DESC_VALIDITY_OFFSET, 0);
        buf.putInt(d + DESC_VALIDITY_LENGTH, validityLength);
        buf.putInt(d + DESC_OFFSETS_OFFSET, viewsOffset);
        buf.putInt(d + DESC_OFFSETS_LENGTH, rows * VIEW_BYTES);
        buf.putInt(d + DESC_DATA_OFFSET, dataOffset);
        buf.putInt(d + DESC_DATA_LENGTH, cursor);
        buf.putInt(d + DESC_BUFFERS_OFFSET, buffersOffset);
        buf.putInt(d + DESC_BUFFERS_LENGTH, buffersLength);
        publishSequence(i, pos);
    }

    private void writeChunkMapAndDescriptor(
            int p, int d, int rows, int chunkMapOffset, Chunk... chunks) {
        if (chunkMapOffset + chunks.length * CHUNK_MAP_ENTRY_BYTES > slotBytes) {
            throw new IllegalArgumentException("the batch does not fit a slot");
        }
        for (int k = 0; k < chunks.length; k++) {
            Chunk c = chunks[k];
            int e = p + chunkMapOffset + k * CHUNK_MAP_ENTRY_BYTES;
            buf.putInt(e + CHUNK_STREAMLET, c.streamlet());
            buf.putInt(e + CHUNK_RECORD_COUNT, c.records().size());
            buf.putLong(e + CHUNK_GROUP, c.at().group());
            buf.putLong(e + CHUNK_SEGMENT, c.at().segment());
            buf.putInt(e + CHUNK_BYTE_POSITION, c.at().offset());
            buf.putInt(e + CHUNK_CHUNK_BYTES, c.chunkBytes());
            buf.putLong(e + CHUNK_FIRST_TIMESTAMP_MS, timestampOf(c.at()));
        }
        buf.putInt(d + DESC_ROW_COUNT, rows);
        buf.putInt(d + DESC_CHUNK_COUNT, chunks.length);
        buf.putInt(d + DESC_CHUNK_MAP_OFFSET, chunkMapOffset);
        buf.putInt(d + DESC_CHUNK_MAP_LENGTH, chunks.length * CHUNK_MAP_ENTRY_BYTES);
        buf.putInt(d + DESC_FLAGS, 0);
        buf.putInt(d + DESC_PAYLOAD_LENGTH, chunkMapOffset + chunks.length * CHUNK_MAP_ENTRY_BYTES);
    }

    private void publishSequence(int i, long pos) {
        LONG.setRelease(buf, descriptor(i, pos) + DESC_SEQUENCE, pos + 1);
        LONG.getAndAdd(buf, ring(i) + RING_PUBLISHED, 1L);
        INT.getAndAdd(buf, ring(i) + RING_DATA_DOORBELL, 1);
    }

    private static int align(int n) {
        return (n + BUFFER_ALIGNMENT - 1) / BUFFER_ALIGNMENT * BUFFER_ALIGNMENT;
    }

    /** The first-record timestamp this test region writes for the chunk at {@code at}. */
    public static long timestampOf(Position at) {
        return 1_700_000_000_000L + at.offset();
    }
}
