package io.nearstream.benchmarks;

import static java.util.concurrent.TimeUnit.NANOSECONDS;

import io.nearstream.client.Chunks;
import io.nearstream.client.Position;
import io.nearstream.client.PushRingSpec;
import io.nearstream.client.PushSplitStart;
import io.nearstream.client.PushSubscription;
import io.nearstream.jni.ArrowSlotView;
import io.nearstream.jni.ShmLayout;
import io.nearstream.jni.ShmRegion;
import io.nearstream.jni.SlotRing;
import io.nearstream.process.BrokerProcess;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The cost of one slot hand-off on the consumer side, in nanoseconds per slot: take a slot the
 * broker has published ({@link SlotRing#tryNext()}, one acquire load), map it as an Arrow batch
 * ({@link ArrowSlotView#load}: foreign allocation, three slices, {@code VectorLoader}) and hand it
 * back ({@link ArrowSlotView#clear()} → {@link SlotRing#release}: release store, two atomic adds, a
 * futex wake only if the broker sleeps on the ring).
 *
 * <p>Setup, chosen so that the data copy stays out of the figure: a real {@code nearstreamd} push
 * subscription with one ring of {@value #SLOTS} slots of 64 KiB (the broker's smallest slot). The
 * stream holds exactly {@value #SLOTS} chunks per streamlet, each a little over half a slot, so the
 * broker puts exactly one chunk ({@code recordsPerSlot} records) in every slot. Before each
 * invocation (not measured) the broker fills the whole ring: the setup points the subscription at
 * the other streamlet from its start (PushUpdate) and waits until all {@value #SLOTS} slots are
 * published. The invocation then takes, maps and releases every slot; the records are not read (the
 * Arrow view maps them without a copy), so their count and size only matter through the validity
 * bitmap's null count. The broker is idle meanwhile except for one wake-up: the ring was full, so
 * the first release rings the futex (1 in {@value #SLOTS} hand-offs).
 *
 * <p>What this leaves out: the broker's side of a hand-off (claiming a slot, writing the Arrow
 * layout and chunk map, the publish store) is measured by the broker's own benchmarks and scales
 * with the slot's bytes; the futex system calls alone are in {@code
 * io.nearstream.jni.JniCallsBenchmark}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(NANOSECONDS)
@OperationsPerInvocation(SlotHandoffBenchmark.SLOTS)
public class SlotHandoffBenchmark extends BenchmarkBase {

    /** Slots per ring, all taken, mapped and released in one invocation. */
    static final int SLOTS = 256;

    /** The broker's smallest slot. */
    static final int SLOT_BYTES = 64 * 1024;

    /** Record bytes per slot: more than half a slot, so two chunks never share one. */
    private static final int BYTES_PER_SLOT = 40_000;

    private static final VarHandle SEQUENCE =
            MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    private static final long FILL_TIMEOUT_NS = TimeUnit.SECONDS.toNanos(30);

    /** Records in each slot (one chunk of them); their size makes up {@value #BYTES_PER_SLOT}. */
    @Param({"1", "400"})
    public int recordsPerSlot;

    private PreloadedStream stream;
    private PushSubscription subscription;
    private ShmRegion region;
    private SlotRing ring;
    private BufferAllocator allocator;
    private ArrowSlotView view;

    /** The streamlet the ring is being filled from; the next fill switches to the other one. */
    private int streamlet;

    private boolean ringDrained;
    private long rowsTaken;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        int recordBytes = BYTES_PER_SLOT / recordsPerSlot;
        int chunkBytes =
                Chunks.HEADER_BYTES + recordsPerSlot * (Chunks.RECORD_PREFIX_BYTES + recordBytes);
        stream =
                PreloadedStream.start(
                        BrokerProcess.start(),
                        2,
                        2 * SLOTS * recordsPerSlot,
                        recordBytes,
                        chunkBytes);
        subscription =
                stream.client()
                        .pushSubscribe(
                                stream.stream(),
                                SLOTS,
                                SLOT_BYTES,
                                (int) TimeUnit.MINUTES.toMillis(5),
                                rings(streamlet))
                        .get(30, TimeUnit.SECONDS);
        region = ShmRegion.map(Path.of(subscription.regionPath()));
        long deadline = System.nanoTime() + FILL_TIMEOUT_NS;
        while (region.ring(0).state() != ShmLayout.RING_ACTIVE) {
            checkDeadline(deadline, "the broker to activate the ring");
            Thread.sleep(1);
        }
        ring = region.ring(0).attach();
        allocator = new RootAllocator();
        view = new ArrowSlotView(allocator);
    }

    private static List<PushRingSpec> rings(int streamlet) {
        return List.of(
                new PushRingSpec(0, List.of(new PushSplitStart(streamlet, Position.EARLIEST))));
    }

    /** Makes the broker fill the whole ring again, then waits until it has. */
    @Setup(Level.Invocation)
    public void fillRing() throws Exception {
        if (ringDrained) {
            streamlet = 1 - streamlet; // a split new to the subscription starts where asked
            stream.client()
                    .pushUpdate(subscription.subscriptionId(), rings(streamlet))
                    .get(30, TimeUnit.SECONDS);
            ringDrained = false;
        }
        long last = ring.nextPosition() + SLOTS - 1;
        int sequence = ring.descriptorOffset(last) + ShmLayout.DESC_SEQUENCE;
        long deadline = System.nanoTime() + FILL_TIMEOUT_NS;
        while ((long) SEQUENCE.getAcquire(ring.buffer(), sequence) != last + 1) {
            checkDeadline(deadline, "the broker to fill " + SLOTS + " slots");
            Thread.onSpinWait();
        }
        ring.heartbeat();
        rowsTaken = 0;
    }

    @Benchmark
    public long takeMapRelease() throws Exception {
        long rows = 0;
        for (int i = 0; i < SLOTS; i++) {
            long position = ring.tryNext();
            if (position < 0) {
                throw new IllegalStateException("slot " + ring.nextPosition() + " not published");
            }
            rows += view.load(ring, position).getRowCount();
            view.clear(); // the last reference: the slot goes back to the broker
        }
        rowsTaken = rows;
        return rows;
    }

    /** Every slot held one whole chunk, or the figure is not per hand-off. */
    @TearDown(Level.Invocation)
    public void checkDrained() {
        ringDrained = true;
        if (rowsTaken != (long) SLOTS * recordsPerSlot) {
            throw new IllegalStateException(
                    "took "
                            + rowsTaken
                            + " rows from "
                            + SLOTS
                            + " slots, expected "
                            + recordsPerSlot
                            + " per slot");
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        try {
            if (view != null) {
                view.close();
                allocator.close();
            }
            if (region != null) {
                region.close();
            }
            if (subscription != null) {
                stream.client().pushClose(subscription.subscriptionId()).get(30, TimeUnit.SECONDS);
            }
        } finally {
            stream.close();
        }
    }

    private static void checkDeadline(long deadline, String what) {
        if (System.nanoTime() > deadline) {
            throw new IllegalStateException("timed out waiting for " + what);
        }
    }
}
