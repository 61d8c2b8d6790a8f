package io.nearstream.jni;

import static io.nearstream.jni.ShmLayout.*;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A mapped push region (one {@code /dev/shm} file per push subscription, created by the broker),
 * laid out as {@link ShmLayout} draws it. {@link #map} validates magic, version and geometry with
 * acquire reads; {@link #ring} gives the consumer side of one ring.
 *
 * <p>The mapping is reference counted: {@link #close()} drops the owner's reference (idempotent,
 * {@link AtomicBoolean#compareAndSet}) and the memory is unmapped once every Arrow slot still
 * wrapped by an {@link ArrowSlotView} has been released too, so a late buffer release never touches
 * unmapped memory. Everything else ({@link SlotRing} calls) must stop before {@code close()}.
 */
public final class ShmRegion implements AutoCloseable {
    static final VarHandle LONG =
            MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    static final VarHandle INT =
            MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

    private final Path path;
    private final long address;
    private final long length;
    private final ByteBuffer header;
    private final int ringCount;
    private final int slotsPerRing;
    private final int slotBytes;
    private final int payloadOffset;
    private final long ringStride;
    private final long brokerEpoch;
    private final int slotFormat;
    private final String segmentFilePrefix;
    private final SegmentFileMappings segmentFiles;
    private final SlotRing[] rings;

    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicInteger refs = new AtomicInteger(1);

    private ShmRegion(Path path, long address, long length) throws IOException {
        this.path = path;
        this.address = address;
        this.length = length;
        this.header = Natives.directBuffer(address, HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        // Magic is written last by the broker with a release store: everything else in the
        // header is visible once it reads right.
        long magic = (long) LONG.getAcquire(header, REGION_MAGIC);
        if (magic != MAGIC) {
            throw invalid(
                    String.format(
                            "magic is 0x%016x, expected 0x%016x (\"NSPUSH01\"): not a push region,"
                                    + " or the broker has not finished creating it",
                            magic, MAGIC));
        }
        int version = header.getInt(REGION_LAYOUT_VERSION);
        if (version != LAYOUT_VERSION) {
            throw invalid("layout version " + version + ", this jar understands " + LAYOUT_VERSION);
        }
        expect("header_bytes", header.getInt(REGION_HEADER_BYTES), HEADER_BYTES);
        expect("descriptor_bytes", header.getInt(REGION_DESCRIPTOR_BYTES), DESCRIPTOR_BYTES);
        expect("ring_header_bytes", header.getInt(REGION_RING_HEADER_BYTES), RING_HEADER_BYTES);
        ringCount = header.getInt(REGION_RING_COUNT);
        slotsPerRing = header.getInt(REGION_SLOTS_PER_RING);
        slotBytes = header.getInt(REGION_SLOT_BYTES);
        if (ringCount <= 0 || slotsPerRing <= 0) {
            throw invalid("ring_count " + ringCount + ", slots_per_ring " + slotsPerRing);
        }
        if (slotBytes <= 0 || slotBytes > MAX_SLOT_BYTES || slotBytes % BUFFER_ALIGNMENT != 0) {
            throw invalid("slot_bytes " + slotBytes + " (must be a multiple of 64, <= 2^30)");
        }
        payloadOffset = header.getInt(REGION_PAYLOAD_OFFSET);
        expect("payload_offset", payloadOffset, ShmLayout.payloadOffset(slotsPerRing));
        ringStride = header.getLong(REGION_RING_STRIDE);
        expect("ring_stride", ringStride, ShmLayout.ringStride(slotsPerRing, slotBytes));
        if (ringStride > Integer.MAX_VALUE) {
            throw invalid(
                    "ring_stride " + ringStride + " exceeds 2 GiB, the reach of a ByteBuffer");
        }
        long regionBytes = header.getLong(REGION_REGION_BYTES);
        expect("region_bytes", regionBytes, regionBytes(ringCount, slotsPerRing, slotBytes));
        if (regionBytes > length) {
            throw invalid("region_bytes " + regionBytes + " but only " + length + " mapped");
        }
        brokerEpoch = header.getLong(REGION_BROKER_EPOCH);
        slotFormat = header.getInt(REGION_SLOT_FORMAT);
        if (slotFormat != SLOT_FORMAT_BINARY && slotFormat != SLOT_FORMAT_BINARY_VIEW) {
            throw invalid("slot_format " + slotFormat + " (0 binary or 1 binary_view)");
        }
        segmentFilePrefix = readSegmentFilePrefix();
        if (slotFormat == SLOT_FORMAT_BINARY_VIEW && segmentFilePrefix.isEmpty()) {
            throw invalid("a binary_view region without a segment_file_prefix");
        }
        // The broker's, for the whole JVM: they outlive this region (SegmentFileMappings).
        segmentFiles =
                slotFormat == SLOT_FORMAT_BINARY_VIEW
                        ? SegmentFileMappings.shared(
                                path.toAbsolutePath().getParent(), segmentFilePrefix, brokerEpoch)
                        : null;
        rings = new SlotRing[ringCount];
        for (int i = 0; i < ringCount; i++) {
            long ringAddress = address + HEADER_BYTES + i * ringStride;
            ByteBuffer ring =
                    Natives.directBuffer(ringAddress, ringStride).order(ByteOrder.LITTLE_ENDIAN);
            rings[i] = new SlotRing(this, i, ring, ringAddress);
        }
    }

    /**
     * Maps the region file at {@code path} (its whole length) and validates its header.
     *
     * @throws IOException when the file cannot be mapped ({@link NativeException}) or is not a
     *     complete push region of this layout version
     */
    public static ShmRegion map(Path path) throws IOException {
        long length = Files.size(path);
        if (length < HEADER_BYTES) {
            throw new IOException(path + ": " + length + " bytes, too small for a push region");
        }
        long address = Natives.mapRegion(path.toString(), length);
        try {
            return new ShmRegion(path, address, length);
        } catch (IOException | RuntimeException e) {
            try {
                Natives.unmapRegion(address, length);
            } catch (NativeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /**
     * The NUL-terminated ASCII prefix; only {@code [A-Za-z0-9._-]}, so that a name made of it can
     * never leave the region's directory.
     */
    private String readSegmentFilePrefix() throws IOException {
        StringBuilder prefix = new StringBuilder();
        for (int i = 0; i < SEGMENT_FILE_PREFIX_BYTES; i++) {
            int c = header.get(REGION_SEGMENT_FILE_PREFIX + i) & 0xFF;
            if (c == 0) {
                return prefix.toString();
            }
            boolean allowed =
                    (c >= 'A' && c <= 'Z')
                            || (c >= 'a' && c <= 'z')
                            || (c >= '0' && c <= '9')
                            || c == '.'
                            || c == '_'
                            || c == '-';
            if (!allowed) {
                throw invalid(
                        String.format(
                                "segment_file_prefix has byte 0x%02x at %d (allowed:"
                                        + " [A-Za-z0-9._-])",
                                c, i));
            }
            prefix.append((char) c);
        }
        throw invalid(
                "segment_file_prefix is not NUL-terminated within "
                        + SEGMENT_FILE_PREFIX_BYTES
                        + " bytes");
    }

    private IOException invalid(String what) {
        return new IOException("push region " + path + ": " + what);
    }

    private void expect(String field, long actual, long expected) throws IOException {
        if (actual != expected) {
            throw invalid(field + " is " + actual + ", expected " + expected);
        }
    }

    /** The consumer side of ring {@code index} (one per source subtask). */
    public SlotRing ring(int index) {
        return rings[index];
    }

    public Path path() {
        return path;
    }

    /** First byte of the mapping. */
    public long address() {
        return address;
    }

    /** Bytes mapped (the file's size at {@link #map} time). */
    public long length() {
        return length;
    }

    public int ringCount() {
        return ringCount;
    }

    public int slotsPerRing() {
        return slotsPerRing;
    }

    public int slotBytes() {
        return slotBytes;
    }

    int payloadOffset() {
        return payloadOffset;
    }

    /** Address of ring {@code index}'s first byte. */
    public long ringAddress(int index) {
        return rings[index].address();
    }

    /** {@link ShmLayout#SLOT_FORMAT_BINARY} or {@link ShmLayout#SLOT_FORMAT_BINARY_VIEW}. */
    public int slotFormat() {
        return slotFormat;
    }

    /** The name prefix of the region's segment files; empty for a binary region. */
    public String segmentFilePrefix() {
        return segmentFilePrefix;
    }

    /** Segment file {@code number}: the prefix and the number in decimal, next to the region. */
    public Path segmentFilePath(long number) {
        return path.resolveSibling(segmentFilePrefix + Long.toUnsignedString(number));
    }

    /**
     * The mappings of the segment files the region's view slots point into (null for a binary
     * region): the broker's for the whole JVM, so they outlive the region ({@link
     * SegmentFileMappings#shared}).
     */
    public SegmentFileMappings segmentFiles() {
        return segmentFiles;
    }

    /** The broker epoch read at {@link #map} time. */
    public long brokerEpoch() {
        return brokerEpoch;
    }

    /** The broker epoch now (acquire); a change means the broker restarted. */
    public long currentBrokerEpoch() {
        return (long) LONG.getAcquire(header, REGION_BROKER_EPOCH);
    }

    /** The broker's last heartbeat, CLOCK_MONOTONIC ns (= {@link System#nanoTime()} on Linux). */
    public long brokerHeartbeatNanos() {
        return (long) LONG.getAcquire(header, REGION_BROKER_HEARTBEAT_NS);
    }

    /** {@link ShmLayout#REGION_OPEN} or {@link ShmLayout#REGION_CLOSED}. */
    public int regionState() {
        return (int) INT.getAcquire(header, REGION_STATE);
    }

    /**
     * Fails when the broker is gone: the region closed, the epoch changed since {@link #map}, or no
     * heartbeat for {@code staleAfterNanos}.
     */
    public void checkBrokerAlive(long staleAfterNanos) throws IOException {
        if (regionState() == REGION_CLOSED) {
            throw invalid("closed by the broker");
        }
        long epoch = currentBrokerEpoch();
        if (epoch != brokerEpoch) {
            throw invalid("broker epoch changed from " + brokerEpoch + " to " + epoch);
        }
        long age = System.nanoTime() - brokerHeartbeatNanos();
        if (age > staleAfterNanos) {
            throw invalid("broker heartbeat is " + age / 1_000_000 + " ms old");
        }
    }

    /**
     * Tells the broker that slots were released: bumps {@code release_doorbell} and wakes it only
     * when it sleeps ({@code broker_waiting} set).
     */
    void ringReleaseDoorbell() throws NativeException {
        // getAndAdd is a full fence: the broker_waiting load below cannot move above it, which is
        // what makes the broker's "set waiting, re-check, futex wait" safe (Dekker).
        INT.getAndAdd(header, REGION_RELEASE_DOORBELL, 1);
        if ((int) INT.getVolatile(header, REGION_BROKER_WAITING) != 0) {
            Natives.futexWake(address + REGION_RELEASE_DOORBELL, Integer.MAX_VALUE);
        }
    }

    /** Takes a reference that keeps the mapping alive; false once it is being unmapped. */
    boolean retain() {
        for (; ; ) {
            int n = refs.get();
            if (n <= 0) {
                return false;
            }
            if (refs.compareAndSet(n, n + 1)) {
                return true;
            }
        }
    }

    /** Drops a reference; the last one unmaps. */
    void releaseRef() {
        if (refs.decrementAndGet() == 0) {
            try {
                Natives.unmapRegion(address, length);
            } catch (NativeException e) {
                throw new IllegalStateException("unmapping " + path, e);
            }
        }
    }

    public boolean isClosed() {
        return closed.get();
    }

    /**
     * Drops the owner's reference; idempotent. The segment file mappings stay for the broker's next
     * regions ({@link SegmentFileMappings#shared}).
     */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            releaseRef();
        }
    }
}
