package io.nearstream.jni;

import static io.nearstream.jni.ShmLayout.*;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SlotRingTest {

    private static byte[][] rowsOf(long pos) {
        int n = (int) (pos % 5) + 1;
        byte[][] rows = new byte[n][];
        for (int i = 0; i < n; i++) {
            rows[i] = ("p" + pos + "-r" + i).getBytes(StandardCharsets.UTF_8);
        }
        return rows;
    }

    @Test
    void tryNextSeesOnlyPublishedSlotsAndReleaseHandsThemBack(@TempDir Path tmp) throws Exception {
        long base = 1000;
        try (TestRegion broker = TestRegion.create(tmp.resolve("r"), 2, 4, 4096, base);
                ShmRegion region = ShmRegion.map(broker.path)) {
            SlotRing ring = region.ring(1).attach();
            assertThat(ring.nextPosition()).isEqualTo(base);
            assertThat(ring.tryNext()).isEqualTo(-1);
            broker.publish(1, base, base, rowsOf(base));
            assertThat(region.ring(0).attach().tryNext()).isEqualTo(-1);
            long pos = ring.tryNext();
            assertThat(pos).isEqualTo(base);
            assertThat(ring.tryNext()).isEqualTo(-1);
            assertThat(ring.rowCount(pos)).isEqualTo(1);
            assertThat(ring.chunkCount(pos)).isEqualTo(1);
            assertThat(ring.chunkStreamlet(pos, 0)).isEqualTo(7);
            assertThat(ring.chunkRecordCount(pos, 0)).isEqualTo(1);
            assertThat(ring.chunkGroup(pos, 0)).isEqualTo(pos);
            assertThat(ring.chunkSegment(pos, 0)).isEqualTo(pos * 3);
            assertThat(ring.chunkBytePosition(pos, 0)).isEqualTo(4096);
            assertThat(broker.isFree(1, base, base + 4)).isFalse();
            ring.release(pos);
            assertThat(broker.sequence(1, base, pos)).isEqualTo(pos + 4);
            assertThat(broker.isFree(1, base, base + 4)).isTrue();
            assertThat(broker.released(1)).isEqualTo(1);
            assertThat(broker.releaseDoorbell()).isEqualTo(1);
        }
    }

    @Test
    void aSlotTakenBeforeTheRingWasTakenBackIsNotReleasedIntoTheNewGeneration(@TempDir Path tmp)
            throws Exception {
        long base = 0;
        try (TestRegion broker = TestRegion.create(tmp.resolve("r"), 1, 4, 4096, base);
                ShmRegion region = ShmRegion.map(broker.path)) {
            SlotRing ring = region.ring(0).attach();
            broker.publish(0, base, base, rowsOf(base));
            long pos = ring.tryNext();
            assertThat(pos).isEqualTo(base);
            // The broker reclaims the ring (stale consumer) and hands it to a new generation.
            long newBase = 40;
            broker.activate(0, newBase);
            assertThat(ring.detached()).isTrue();

            assertThat(ring.release(pos)).isFalse();

            assertThat(broker.released(0)).isZero();
            assertThat(broker.releaseDoorbell()).isZero();
            for (long p = newBase; p < newBase + 4; p++) {
                assertThat(broker.sequence(0, newBase, p)).isEqualTo(p);
            }
        }
    }

    @Test
    void awaitTimesOutThenIsWokenByThePublisher(@TempDir Path tmp) throws Exception {
        try (TestRegion broker = TestRegion.create(tmp.resolve("r"), 1, 2, 4096, 0);
                ShmRegion region = ShmRegion.map(broker.path)) {
            SlotRing ring = region.ring(0).attach();
            long start = System.nanoTime();
            assertThat(ring.await(TimeUnit.MILLISECONDS.toNanos(30))).isFalse();
            assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(25_000_000L);
            assertThat(ring.futexSleeps()).isPositive();
            assertThat(ring.buffer().getInt(RING_CONSUMER_WAITING)).isZero();

            Thread publisher =
                    new Thread(
                            () -> {
                                try {
                                    Thread.sleep(50);
                                    broker.publish(0, 0, 0, rowsOf(0));
                                } catch (Exception e) {
                                    throw new AssertionError(e);
                                }
                            });
            publisher.start();
            assertThat(ring.await(TimeUnit.SECONDS.toNanos(30))).isTrue();
            assertThat(ring.tryNext()).isZero();
            publisher.join();
        }
    }

    @Test
    void heartbeatIsMonotonicNanos(@TempDir Path tmp) throws Exception {
        try (TestRegion broker = TestRegion.create(tmp.resolve("r"), 1, 2, 4096, 0);
                ShmRegion region = ShmRegion.map(broker.path)) {
            SlotRing ring = region.ring(0).attach();
            long before = System.nanoTime();
            ring.heartbeat();
            assertThat(ring.buffer().getLong(RING_CONSUMER_HEARTBEAT_NS))
                    .isBetween(before, System.nanoTime());
        }
    }

    @Test
    void detachedAfterReclaimOrANewGeneration(@TempDir Path tmp) throws Exception {
        try (TestRegion broker = TestRegion.create(tmp.resolve("r"), 1, 2, 4096, 0);
                ShmRegion region = ShmRegion.map(broker.path)) {
            SlotRing ring = region.ring(0).attach();
            assertThat(ring.detached()).isFalse();
            broker.activate(0, 8); // a new generation behind the consumer's back
            assertThat(ring.detached()).isTrue();
            ring.attach();
            assertThat(ring.detached()).isFalse();
            assertThat(ring.nextPosition()).isEqualTo(8);
            broker.buf.putInt(broker.ring(0) + RING_STATE, RING_RECLAIMED);
            assertThat(ring.detached()).isTrue();
        }
    }

    /** A producer thread laps a 4-slot ring thousands of times; the consumer sees every slot. */
    @Test
    void manyLapsInOrderWithoutLoss(@TempDir Path tmp) throws Exception {
        final int slots = 4;
        final long total = 20_000;
        final long base = 7;
        try (TestRegion broker = TestRegion.create(tmp.resolve("r"), 1, slots, 4096, base);
                ShmRegion region = ShmRegion.map(broker.path)) {
            SlotRing ring = region.ring(0).attach();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread producer =
                    new Thread(
                            () -> {
                                try {
                                    for (long p = base; p < base + total; p++) {
                                        broker.awaitFree(0, base, p);
                                        broker.publish(0, base, p, rowsOf(p));
                                    }
                                } catch (Throwable t) {
                                    failure.set(t);
                                }
                            },
                            "test-broker");
            producer.start();
            long expected = base;
            while (expected < base + total) {
                assertThat(ring.await(TimeUnit.SECONDS.toNanos(30)))
                        .as("slot %d published", expected)
                        .isTrue();
                long pos = ring.tryNext();
                assertThat(pos).isEqualTo(expected);
                byte[][] want = rowsOf(pos);
                assertThat(ring.rowCount(pos)).isEqualTo(want.length);
                int payload = ring.payloadOffset(pos);
                int offsets = payload + ring.descriptorInt(pos, DESC_OFFSETS_OFFSET);
                int data = payload + ring.descriptorInt(pos, DESC_DATA_OFFSET);
                for (int i = 0; i < want.length; i++) {
                    int from = ring.buffer().getInt(offsets + 4 * i);
                    int to = ring.buffer().getInt(offsets + 4 * i + 4);
                    byte[] got = new byte[to - from];
                    ring.buffer().get(data + from, got);
                    assertThat(got).isEqualTo(want[i]);
                }
                ring.release(pos);
                if ((pos & 1023) == 0) {
                    ring.heartbeat();
                }
                expected++;
            }
            producer.join(30_000);
            assertThat(failure.get()).isNull();
            assertThat(broker.released(0)).isEqualTo(total);
            assertThat(broker.releaseDoorbell()).isEqualTo((int) total);
            assertThat(ring.buffer().getLong(RING_PUBLISHED)).isEqualTo(total);
        }
    }
}
