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
