package io.nearstream.jni;

import static io.nearstream.jni.ShmLayout.*;

import java.io.RandomAccessFile;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;

/**
 * The broker's side of a push region, in Java, for tests (the C++ producer lives in native/):
 * creates a region file laid out by {@link ShmLayout}, activates rings, publishes slots with the
 * broker's protocol (payload, descriptor, release store of the sequence, data doorbell, wake only
 * if the consumer waits) and waits for free slots the way the broker does (spin, then
 * broker_waiting + futex wait on the release doorbell).
 */
final class TestRegion implements AutoCloseable {
    private static final VarHandle LONG = ShmRegion.LONG;
    private static final VarHandle INT = ShmRegion.INT;

    final Path path;
    final int rings;
    final int slots;
    final int slotBytes;
    final long length;
    final long address;
    final ByteBuffer buf;
    long producerSleeps;
    int slotFormat = SLOT_FORMAT_BINARY;
    String segmentFilePrefix = "";

    private TestRegion(Path path, int rings, int slots, int slotBytes) throws Exception {
        this.path = path;
        this.rings = rings;
        this.slots = slots;
        this.slotBytes = slotBytes;
        this.length = regionBytes(rings, slots, slotBytes);
        try (RandomAccessFile raf = new RandomAccessFile(path.toFile(), "rw")) {
            raf.setLength(length);
        }
        this.address = Natives.mapRegion(path.toString(), length);
        this.buf = Natives.directBuffer(address, length).order(ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * Creates the file, writes the header (magic last) and activates every ring at {@code base}.
     */
    static TestRegion create(Path path, int rings, int slots, int slotBytes, long base)
            throws Exception {
        TestRegion r = new TestRegion(path, rings, slots, slotBytes);
        r.writeHeader();
        for (int i = 0; i < rings; i++) {
            r.activate(i, base);
        }
        r.publishMagic();
        return r;
    }

    /**
     * As {@link #create}, for a {@code binary_view} region whose segment files are named {@code
     * prefix + n} next to the region file.
     */
    static TestRegion createView(
            Path path, int rings, int slots, int slotBytes, long base, String prefix)
            throws Exception {
        TestRegion r = new TestRegion(path, rings, slots, slotBytes);
        r.slotFormat = SLOT_FORMAT_BINARY_VIEW;
        r.segmentFilePrefix = prefix;
        r.writeHeader();
        for (int i = 0; i < rings; i++) {
            r.activate(i, base);
        }
        r.publishMagic();
        return r;
    }

    void writeHeader() {
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
        buf.putLong(REGION_BROKER_EPOCH, 42);
        buf.putLong(REGION_BROKER_HEARTBEAT_NS, System.nanoTime());
        buf.putInt(REGION_STATE, REGION_OPEN);
        buf.putInt(REGION_SLOT_FORMAT, slotFormat);
        byte[] prefix = segmentFilePrefix.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        for (int i = 0; i < SEGMENT_FILE_PREFIX_BYTES; i++) {
            buf.put(REGION_SEGMENT_FILE_PREFIX + i, i < prefix.length ? prefix[i] : 0);
        }
    }

    void publishMagic() {
        LONG.setRelease(buf, REGION_MAGIC, MAGIC);
    }

    int ring(int i) {
        return HEADER_BYTES + (int) (i * ringStride(slots, slotBytes));
    }

    int descriptor(int ring, long base, long pos) {
        return ring(ring) + RING_HEADER_BYTES + (int) (pos % slots) * 128;
    }

    int payload(int ring, long base, long pos) {
        return ring(ring) + (int) payloadOffset(slots) + (int) (pos % slots) * slotBytes;
    }

    void activate(int ring, long base) {
        int r = ring(ring);
        buf.putInt(r + RING_ID, ring);
        buf.putInt(r + RING_SUBTASK_INDEX, ring);
        buf.putInt(r + RING_GENERATION, buf.getInt(r + RING_GENERATION) + 1);
        buf.putLong(r + RING_BASE_POSITION, base);
        buf.putLong(r + RING_PUBLISHED, 0);
        buf.putLong(r + RING_RELEASED, 0);
        for (long p = base; p < base + slots; p++) {
            buf.putLong(descriptor(ring, base, p) + DESC_SEQUENCE, p);
        }
        INT.setRelease(buf, r + RING_STATE, RING_ACTIVE);
    }

    boolean isFree(int ring, long base, long pos) {
        return (long) LONG.getAcquire(buf, descriptor(ring, base, pos) + DESC_SEQUENCE) == pos;
    }

    long sequence(int ring, long base, long pos) {
        return (long) LONG.getAcquire(buf, descriptor(ring, base, pos) + DESC_SEQUENCE);
    }

    /** Waits until the slot of {@code pos} is free, as the broker's push thread sleeps. */
    void awaitFree(int ring, long base, long pos) throws Exception {
        for (int i = 0; i < 100; i++) {
            if (isFree(ring, base, pos)) {
                return;
            }
            Thread.onSpinWait();
        }
        while (!isFree(ring, base, pos)) {
            int bell = (int) INT.getVolatile(buf, REGION_RELEASE_DOORBELL);
            INT.setVolatile(buf, REGION_BROKER_WAITING, 1);
            if (!isFree(ring, base, pos)) {
                producerSleeps++;
                Natives.futexWait(address + REGION_RELEASE_DOORBELL, bell, 100_000_000L);
            }
            INT.setVolatile(buf, REGION_BROKER_WAITING, 0);
        }
    }

    /**
     * Writes {@code values} (null = a null row) as a VarBinary batch into the slot of {@code pos}
     * plus a one-entry chunk map, then publishes it.
     */
    void publish(int ring, long base, long pos, byte[][] values) throws Exception {
        int p = payload(ring, base, pos);
        int rows = values.length;
        int validityLength = align((rows + 7) / 8);
        int offsetsOffset = validityLength;
        int offsetsLength = (rows + 1) * 4;
        int dataOffset = offsetsOffset + align(offsetsLength);
        int cursor = 0;
        for (int i = 0; i < validityLength; i++) {
            buf.put(p + i, (byte) 0);
        }
        for (int i = 0; i < rows; i++) {
            buf.putInt(p + offsetsOffset + i * 4, cursor);
            if (values[i] != null) {
                int b = buf.get(p + i / 8);
                buf.put(p + i / 8, (byte) (b | (1 << (i % 8))));
                for (byte v : values[i]) {
                    buf.put(p + dataOffset + cursor++, v);
                }
            }
        }
        buf.putInt(p + offsetsOffset + rows * 4, cursor);
        int dataLength = cursor;
        int chunkMapOffset = dataOffset + align(dataLength);
        if (chunkMapOffset + CHUNK_MAP_ENTRY_BYTES > slotBytes) {
            throw new IllegalArgumentException("batch does not fit a slot");
        }
        int c = p + chunkMapOffset;
        buf.putInt(c + CHUNK_STREAMLET, 7);
        buf.putInt(c + CHUNK_RECORD_COUNT, rows);
        buf.putLong(c + CHUNK_GROUP, pos);
        buf.putLong(c + CHUNK_SEGMENT, pos * 3);
        buf.putInt(c + CHUNK_BYTE_POSITION, 4096);
        buf.putInt(c + CHUNK_CHUNK_BYTES, dataLength + 64);

        int d = descriptor(ring, base, pos);
        buf.putInt(d + DESC_ROW_COUNT, rows);
        buf.putInt(d + DESC_CHUNK_COUNT, 1);
        buf.putInt(d + DESC_VALIDITY_OFFSET, 0);
        buf.putInt(d + DESC_VALIDITY_LENGTH, validityLength);
        buf.putInt(d + DESC_OFFSETS_OFFSET, offsetsOffset);
        buf.putInt(d + DESC_OFFSETS_LENGTH, offsetsLength);
        buf.putInt(d + DESC_DATA_OFFSET, dataOffset);
        buf.putInt(d + DESC_DATA_LENGTH, dataLength);
        buf.putInt(d + DESC_CHUNK_MAP_OFFSET, chunkMapOffset);
        buf.putInt(d + DESC_CHUNK_MAP_LENGTH, CHUNK_MAP_ENTRY_BYTES);
        buf.putInt(d + DESC_FLAGS, 0);
        buf.putInt(d + DESC_PAYLOAD_LENGTH, chunkMapOffset + CHUNK_MAP_ENTRY_BYTES);
        LONG.setRelease(buf, d + DESC_SEQUENCE, pos + 1);

        int r = ring(ring);
        LONG.getAndAdd(buf, r + RING_PUBLISHED, 1L);
        INT.getAndAdd(buf, r + RING_DATA_DOORBELL, 1);
        if ((int) INT.getVolatile(buf, r + RING_CONSUMER_WAITING) != 0) {
            Natives.futexWake(address + r + RING_DATA_DOORBELL, 1);
        }
    }

    /**
     * A row of a view slot: {@code value} (null = a null row) inline when it has at most 12 bytes,
     * else in {@code buffer} at {@code offset}; buffer 0 with offset -1 = copy it into the slot's
     * data area. {@code length} is what the view says (the value's length unless a test lies).
     */
    record ViewRow(byte[] value, int length, int buffer, int offset) {
        static ViewRow copied(byte[] value) {
            return new ViewRow(value, value == null ? 0 : value.length, 0, -1);
        }

        static ViewRow inSegment(byte[] value, int buffer, int offset) {
            return new ViewRow(value, value.length, buffer, offset);
        }
    }

    /**
     * Writes {@code rows} as a binary_view batch into the slot of {@code pos} (validity, views,
     * data, a buffer table of {@code files} = {segment file number, file bytes} pairs, one chunk
     * map entry) and publishes it. The segment files' contents are the test's business.
     */
    void publishViews(int ring, long base, long pos, ViewRow[] rows, long[][] files)
            throws Exception {
        int p = payload(ring, base, pos);
        int n = rows.length;
        int validityLength = align((n + 7) / 8);
        int viewsOffset = validityLength;
        int viewsLength = n * VIEW_BYTES;
        int dataOffset = viewsOffset + align(viewsLength);
        for (int i = 0; i < validityLength; i++) {
            buf.put(p + i, (byte) 0);
        }
        int cursor = 0;
        for (int i = 0; i < n; i++) {
            ViewRow row = rows[i];
            int v = p + viewsOffset + i * VIEW_BYTES;
            for (int b = 0; b < VIEW_BYTES; b++) {
                buf.put(v + b, (byte) 0);
            }
            if (row.value() == null) {
                continue;
            }
            buf.put(p + i / 8, (byte) (buf.get(p + i / 8) | (1 << (i % 8))));
            byte[] value = row.value();
            buf.putInt(v, row.length());
            if (row.length() <= VIEW_INLINE_BYTES) {
                for (int b = 0; b < value.length; b++) {
                    buf.put(v + 4 + b, value[b]);
                }
                continue;
            }
            for (int b = 0; b < 4; b++) {
                buf.put(v + 4 + b, value[b]);
            }
            int offset = row.offset();
            if (row.buffer() == 0 && offset < 0) {
                offset = cursor;
                for (byte b : value) {
                    buf.put(p + dataOffset + cursor++, b);
                }
            }
            buf.putInt(v + 8, row.buffer());
            buf.putInt(v + 12, offset);
        }
        int dataLength = cursor;
        int buffersOffset = dataOffset + align(dataLength);
        int buffersLength = files.length * BUFFER_TABLE_ENTRY_BYTES;
        for (int k = 0; k < files.length; k++) {
            int e = p + buffersOffset + k * BUFFER_TABLE_ENTRY_BYTES;
            buf.putLong(e + BUFFER_SEGMENT_FILE, files[k][0]);
            buf.putInt(e + BUFFER_FILE_BYTES, (int) files[k][1]);
            buf.putInt(e + 12, 0);
        }
        int chunkMapOffset = buffersOffset + align(buffersLength);
        if (chunkMapOffset + CHUNK_MAP_ENTRY_BYTES > slotBytes) {
            throw new IllegalArgumentException("batch does not fit a slot");
        }
        int c = p + chunkMapOffset;
        buf.putInt(c + CHUNK_STREAMLET, 7);
        buf.putInt(c + CHUNK_RECORD_COUNT, n);
        buf.putLong(c + CHUNK_GROUP, pos);
        buf.putLong(c + CHUNK_SEGMENT, pos * 3);
        buf.putInt(c + CHUNK_BYTE_POSITION, 4096);
        buf.putInt(c + CHUNK_CHUNK_BYTES, 64 + 20 * n);

        int d = descriptor(ring, base, pos);
        buf.putInt(d + DESC_ROW_COUNT, n);
        buf.putInt(d + DESC_CHUNK_COUNT, 1);
        buf.putInt(d + DESC_VALIDITY_OFFSET, 0);
        buf.putInt(d + DESC_VALIDITY_LENGTH, validityLength);
        buf.putInt(d + DESC_OFFSETS_OFFSET, viewsOffset);
        buf.putInt(d + DESC_OFFSETS_LENGTH, viewsLength);
        buf.putInt(d + DESC_DATA_OFFSET, dataOffset);
        buf.putInt(d + DESC_DATA_LENGTH, dataLength);
        buf.putInt(d + DESC_BUFFERS_OFFSET, buffersOffset);
        buf.putInt(d + DESC_BUFFERS_LENGTH, buffersLength);
        buf.putInt(d + DESC_CHUNK_MAP_OFFSET, chunkMapOffset);
        buf.putInt(d + DESC_CHUNK_MAP_LENGTH, CHUNK_MAP_ENTRY_BYTES);
        buf.putInt(d + DESC_FLAGS, 0);
        buf.putInt(d + DESC_PAYLOAD_LENGTH, chunkMapOffset + CHUNK_MAP_ENTRY_BYTES);
        publishSequence(ring, base, pos);
    }

    /** Overwrites a 32-bit descriptor field of the slot of {@code pos} (a test corrupting it). */
    void putDescriptorInt(int ring, long base, long pos, int field, int value) {
        buf.putInt(descriptor(ring, base, pos) + field, value);
    }

    private void publishSequence(int ring, long base, long pos) throws Exception {
        LONG.setRelease(buf, descriptor(ring, base, pos) + DESC_SEQUENCE, pos + 1);
        int r = ring(ring);
        LONG.getAndAdd(buf, r + RING_PUBLISHED, 1L);
        INT.getAndAdd(buf, r + RING_DATA_DOORBELL, 1);
        if ((int) INT.getVolatile(buf, r + RING_CONSUMER_WAITING) != 0) {
            Natives.futexWake(address + r + RING_DATA_DOORBELL, 1);
        }
    }

    private static int align(int n) {
        return (n + BUFFER_ALIGNMENT - 1) / BUFFER_ALIGNMENT * BUFFER_ALIGNMENT;
    }

    int releaseDoorbell() {
        return (int) INT.getVolatile(buf, REGION_RELEASE_DOORBELL);
    }

    long released(int ring) {
        return (long) LONG.getAcquire(buf, ring(ring) + RING_RELEASED);
    }

    @Override
    public void close() throws Exception {
        Natives.unmapRegion(address, length);
    }
}
