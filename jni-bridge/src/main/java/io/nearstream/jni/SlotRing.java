package io.nearstream.jni;

import static io.nearstream.jni.ShmLayout.*;

import java.io.IOException;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;

/**
 * The consumer side of one single-producer/single-consumer ring of a {@link ShmRegion}.
 *
 * <p>Slot protocol (docs/shm-layout.md, "Slot protocol"): slot {@code i} serves the positions
 * {@code p} with {@code p mod N == i} (as the broker's {@code RingProducer}); its 64-bit sequence
 * word holds {@code p} while it is free for position {@code p}, {@code p + 1} once the broker has
 * published it (release store after the payload), and the consumer hands it back by storing {@code
 * p + N} (release). While data flows neither side makes a system call: {@link #tryNext()} is one
 * acquire load, {@link #release} a release store plus two atomic adds, and a futex wake only when
 * the broker sleeps.
 *
 * <p>Threading: {@link #tryNext()}, {@link #await} and {@link #heartbeat()} belong to one consumer
 * thread; {@link #release} may be called from any thread (Arrow buffers are released wherever their
 * last reference goes).
 */
public final class SlotRing {
    private static final VarHandle LONG = ShmRegion.LONG;
    private static final VarHandle INT = ShmRegion.INT;

    /** Spins of {@link #await} before it sleeps on the data doorbell. */
    static final int SPIN_LIMIT = 200;

    private final ShmRegion region;
    private final int index;
    private final ByteBuffer ring;
    private final long address;
    private final int slots;
    private final int slotBytes;
    private final int payloadOffset;

    private long base;
    private long next;
    private int generation;

    // Consumer-thread statistics (metrics: spins vs futex sleeps).
    private long spinWakeups;
    private long futexSleeps;
    private long waitNanos;

    SlotRing(ShmRegion region, int index, ByteBuffer ring, long address) {
        this.region = region;
        this.index = index;
        this.ring = ring;
        this.address = address;
        this.slots = region.slotsPerRing();
        this.slotBytes = region.slotBytes();
        this.payloadOffset = region.payloadOffset();
    }

    /**
     * Starts consuming the ring's current generation: reads {@code base_position} and {@code
     * released} (acquire after the {@code state} acquire) and resumes at the first unreleased
     * position.
     *
     * @throws IOException when the broker has not activated the ring
     */
    public SlotRing attach() throws IOException {
        int state = state();
        if (state != RING_ACTIVE) {
            throw new IOException(
                    "ring "
                            + index
                            + " of "
                            + region.path()
                            + " is not active (state "
                            + state
                            + ")");
        }
        generation = (int) INT.getAcquire(ring, RING_GENERATION);
        base = (long) LONG.getAcquire(ring, RING_BASE_POSITION);
        next = base + (long) LONG.getAcquire(ring, RING_RELEASED);
        heartbeat();
        return this;
    }

    public int index() {
        return index;
    }

    /** Address of the ring's first byte (its header). */
    public long address() {
        return address;
    }

    /** The ring's bytes (header, descriptors, payloads), little-endian. */
    public ByteBuffer buffer() {
        return ring;
    }

    public ShmRegion region() {
        return region;
    }

    /**
     * {@link ShmLayout#RING_FREE}, {@link ShmLayout#RING_ACTIVE} or {@link
     * ShmLayout#RING_RECLAIMED}.
     */
    public int state() {
        return (int) INT.getAcquire(ring, RING_STATE);
    }

    public int generation() {
        return (int) INT.getAcquire(ring, RING_GENERATION);
    }

    /**
     * True when the broker has taken the ring back (reclaimed, or re-activated for a new
     * generation) since {@link #attach()}: the consumer must stop and must not release more.
     */
    public boolean detached() {
        return state() != RING_ACTIVE || generation() != generation;
    }

    public int subtaskIndex() {
        return ring.getInt(RING_SUBTASK_INDEX);
    }

    /** The first position of this generation, read by {@link #attach()}. */
    public long basePosition() {
        return base;
    }

    /** The position {@link #tryNext()} looks at. */
    public long nextPosition() {
        return next;
    }

    /** Slot index of position {@code position}. */
    public int slotOf(long position) {
        return (int) Long.remainderUnsigned(position, slots);
    }

    /** Offset of the descriptor of {@code position} in {@link #buffer()}. */
    public int descriptorOffset(long position) {
        return RING_HEADER_BYTES + slotOf(position) * DESCRIPTOR_BYTES;
    }

    /** Offset of the payload of {@code position} in {@link #buffer()}. */
    public int payloadOffset(long position) {
        return payloadOffset + slotOf(position) * slotBytes;
    }

    /** Address of the payload of {@code position}. */
    public long payloadAddress(long position) {
        return address + payloadOffset(position);
    }

    /** True when the slot at {@link #nextPosition()} is published (one acquire load). */
    public boolean available() {
        return (long) LONG.getAcquire(ring, descriptorOffset(next) + DESC_SEQUENCE) == next + 1;
    }

    /**
     * Takes the next published slot if there is one.
     *
     * @return its position (its descriptor and payload are readable until it is released), or -1
     */
    public long tryNext() {
        long pos = next;
        if ((long) LONG.getAcquire(ring, descriptorOffset(pos) + DESC_SEQUENCE) != pos + 1) {
            return -1;
        }
        next = pos + 1;
        return pos;
    }

    /**
     * Waits until the slot at {@link #nextPosition()} is published: spins briefly, then sets {@code
     * consumer_waiting}, re-checks and futex-waits on {@code data_doorbell}.
     *
     * @return true when a slot is available, false when {@code timeoutNanos} passed first (the
     *     caller checks liveness and calls again)
     */
    public boolean await(long timeoutNanos) throws NativeException {
        if (available()) {
            return true;
        }
        long start = System.nanoTime();
        try {
            for (int i = 0; i < SPIN_LIMIT; i++) {
                Thread.onSpinWait();
                if (available()) {
                    spinWakeups++;
                    return true;
                }
            }
            long deadline = start + timeoutNanos;
            for (; ; ) {
                int bell = (int) INT.getVolatile(ring, RING_DATA_DOORBELL);
                INT.setVolatile(ring, RING_CONSUMER_WAITING, 1);
                // setVolatile is a full fence: the re-check cannot pass the flag store, so a slot
                // published after it sees consumer_waiting = 1 and rings the futex.
                if (available()) {
                    return true;
                }
                long remaining = deadline - System.nanoTime();
                if (remaining <= 0) {
                    return false;
                }
                futexSleeps++;
                Natives.futexWait(address + RING_DATA_DOORBELL, bell, remaining);
                if (available()) {
                    return true;
                }
            }
        } finally {
            INT.setRelease(ring, RING_CONSUMER_WAITING, 0);
            waitNanos += System.nanoTime() - start;
        }
    }

    /**
     * Hands the slot of {@code position} back to the broker: stores {@code position + N} (release),
     * counts it in {@code released}, bumps the region's release doorbell and wakes the broker only
     * if it sleeps. Thread-safe; each position must be released exactly once.
     *
     * <p>A slot taken before the broker took the ring back ({@link #detached()}: reclaimed, or
     * re-activated for a new generation) is not released: the broker dropped it already, and a
     * store into the new generation's sequence words would corrupt the new consumer's ring. (The
     * broker reclaims only a ring whose consumer stopped heartbeating for the consumer timeout, so
     * a reclaim racing this check needs a consumer stalled that long.)
     *
     * @return whether the slot was handed back
     */
    public boolean release(long position) throws NativeException {
        if (detached()) {
            return false;
        }
        LONG.setRelease(ring, descriptorOffset(position) + DESC_SEQUENCE, position + slots);
        LONG.getAndAddRelease(ring, RING_RELEASED, 1L);
        region.ringReleaseDoorbell();
        return true;
    }

    /** Stores {@code System.nanoTime()} (CLOCK_MONOTONIC) in {@code consumer_heartbeat_ns}. */
    public void heartbeat() {
        LONG.setRelease(ring, RING_CONSUMER_HEARTBEAT_NS, System.nanoTime());
    }

    /**
     * The consumer stops for good: stores 0 in {@code consumer_heartbeat_ns}, which reads as dead
     * at once (docs/shm-layout.md, "Liveness"), so the broker reclaims the ring at its next check
     * and a process watching the ring's consumer sees it gone without waiting for the timeout.
     */
    public void abandon() {
        LONG.setRelease(ring, RING_CONSUMER_HEARTBEAT_NS, 0L);
    }

    /** The consumer's last heartbeat, CLOCK_MONOTONIC ns; 0 once it abandoned the ring. */
    public long consumerHeartbeatNanos() {
        return (long) LONG.getAcquire(ring, RING_CONSUMER_HEARTBEAT_NS);
    }

    // ---- descriptor fields of a taken slot (plain reads: ordered by the sequence acquire) ----

    public int rowCount(long position) {
        return ring.getInt(descriptorOffset(position) + DESC_ROW_COUNT);
    }

    /** The slot's descriptor flags: 0 for a batch, else {@code ShmLayout.SLOT_*} (a marker). */
    public int flags(long position) {
        return ring.getInt(descriptorOffset(position) + DESC_FLAGS);
    }

    public int chunkCount(long position) {
        return ring.getInt(descriptorOffset(position) + DESC_CHUNK_COUNT);
    }

    /** A 32-bit descriptor field, e.g. {@link ShmLayout#DESC_DATA_OFFSET}. */
    public int descriptorInt(long position, int field) {
        return ring.getInt(descriptorOffset(position) + field);
    }

    /** Offset of chunk map entry {@code chunk} of {@code position} in {@link #buffer()}. */
    public int chunkEntryOffset(long position, int chunk) {
        return payloadOffset(position)
                + descriptorInt(position, DESC_CHUNK_MAP_OFFSET)
                + chunk * CHUNK_MAP_ENTRY_BYTES;
    }

    public int chunkStreamlet(long position, int chunk) {
        return ring.getInt(chunkEntryOffset(position, chunk) + CHUNK_STREAMLET);
    }

    public int chunkRecordCount(long position, int chunk) {
        return ring.getInt(chunkEntryOffset(position, chunk) + CHUNK_RECORD_COUNT);
    }

    public long chunkGroup(long position, int chunk) {
        return ring.getLong(chunkEntryOffset(position, chunk) + CHUNK_GROUP);
    }

    public long chunkSegment(long position, int chunk) {
        return ring.getLong(chunkEntryOffset(position, chunk) + CHUNK_SEGMENT);
    }

    public int chunkBytePosition(long position, int chunk) {
        return ring.getInt(chunkEntryOffset(position, chunk) + CHUNK_BYTE_POSITION);
    }

    public int chunkBytes(long position, int chunk) {
        return ring.getInt(chunkEntryOffset(position, chunk) + CHUNK_CHUNK_BYTES);
    }

    /** The chunk's first-record timestamp (ms since the epoch): the event time of its rows. */
    public long chunkFirstTimestampMs(long position, int chunk) {
        return ring.getLong(chunkEntryOffset(position, chunk) + CHUNK_FIRST_TIMESTAMP_MS);
    }

    // ---- statistics (consumer thread) ----

    /** Waits that ended while spinning. */
    public long spinWakeups() {
        return spinWakeups;
    }

    /** futex waits issued. */
    public long futexSleeps() {
        return futexSleeps;
    }

    /** Time spent in {@link #await} when no slot was available at once. */
    public long waitNanos() {
        return waitNanos;
    }

    int slotBytes() {
        return slotBytes;
    }
}
