package io.nearstream.jni;

import static io.nearstream.jni.ShmLayout.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ArrowSlotViewTest {
    private static final int SLOTS = 4;
    private static final int SLOT_BYTES = 64 * 1024;

    private static byte[][] rows(long pos, int n) {
        byte[][] rows = new byte[n][];
        for (int i = 0; i < n; i++) {
            rows[i] =
                    i % 7 == 3
                            ? null
                            : ("slot-" + pos + "-row-" + i).getBytes(StandardCharsets.UTF_8);
        }
        return rows;
    }

    @Test
    void wrapsTheSlotWithoutCopyingAndReleasesItWithTheLastBuffer(@TempDir Path tmp)
            throws Exception {
        RootAllocator allocator = new RootAllocator();
        try (TestRegion broker = TestRegion.create(tmp.resolve("r"), 1, SLOTS, SLOT_BYTES, 0);
                ShmRegion region = ShmRegion.map(broker.path)) {
            SlotRing ring = region.ring(0).attach();
            try (ArrowSlotView view = new ArrowSlotView(allocator)) {
                byte[][] want = rows(0, 100);
                broker.publish(0, 0, 0, want);
                long pos = ring.tryNext();
                VectorSchemaRoot root = view.load(ring, pos);
                VarBinaryVector v = view.vector();
                assertThat(root.getRowCount()).isEqualTo(100);
                assertThat(v.getNullCount()).isEqualTo(14); // rows 3, 10, ..., 94
                for (int i = 0; i < want.length; i++) {
                    assertThat(v.get(i)).as("row %d", i).isEqualTo(want[i]);
                }
                // Zero copy: the vector's buffers are the slot's memory.
                long payload = ring.payloadAddress(pos);
                assertThat(v.getDataBuffer().memoryAddress())
                        .isEqualTo(payload + ring.descriptorInt(pos, DESC_DATA_OFFSET));
                assertThat(v.getOffsetBuffer().memoryAddress())
                        .isEqualTo(payload + ring.descriptorInt(pos, DESC_OFFSETS_OFFSET));
                assertThat(v.getValidityBuffer().memoryAddress())
                        .isEqualTo(payload + ring.descriptorInt(pos, DESC_VALIDITY_OFFSET));
                int data = ring.payloadOffset(pos) + ring.descriptorInt(pos, DESC_DATA_OFFSET);
                ring.buffer().put(data, (byte) 'S');
                assertThat(v.get(0)[0]).isEqualTo((byte) 'S');

                // Held: accounted, not released.
                assertThat(view.allocator().getAllocatedMemory()).isEqualTo(SLOT_BYTES);
                assertThat(broker.released(0)).isZero();
                view.clear();
                assertThat(broker.released(0)).isEqualTo(1);
                assertThat(broker.sequence(0, 0, pos)).isEqualTo(pos + SLOTS);
                assertThat(view.allocator().getAllocatedMemory()).isZero();
                assertThat(allocator.getAllocatedMemory()).isZero();
            }
        }
        assertThat(allocator.getAllocatedMemory()).isZero();
        assertThatCode(allocator::close).doesNotThrowAnyException();
    }

    @Test
    void reusedRootReleasesThePreviousSlotOnEachLoadOverManyLaps(@TempDir Path tmp)
            throws Exception {
        RootAllocator allocator = new RootAllocator();
        try (TestRegion broker = TestRegion.create(tmp.resolve("r"), 1, SLOTS, SLOT_BYTES, 0);
                ShmRegion region = ShmRegion.map(broker.path)) {
            SlotRing ring = region.ring(0).attach();
            try (ArrowSlotView view = new ArrowSlotView(allocator)) {
                for (long p = 0; p < 50; p++) {
                    broker.awaitFree(0, 0, p);
                    byte[][] want = rows(p, (int) (p % 13));
                    broker.publish(0, 0, p, want);
                    long pos = ring.tryNext();
                    assertThat(pos).isEqualTo(p);
                    VectorSchemaRoot root = view.load(ring, pos);
                    // The previous slot went back when this one replaced it.
                    assertThat(broker.released(0)).isEqualTo(p);
                    assertThat(root.getRowCount()).isEqualTo(want.length);
                    for (int i = 0; i < want.length; i++) {
                        assertThat(view.vector().get(i)).isEqualTo(want[i]);
                    }
                    assertThat(view.allocator().getAllocatedMemory()).isEqualTo(SLOT_BYTES);
                }
            }
            assertThat(broker.released(0)).isEqualTo(50);
        }
        assertThat(allocator.getAllocatedMemory()).isZero();
        assertThatCode(allocator::close).doesNotThrowAnyException();
    }

    @Test
    void regionStaysMappedUntilTheLastSlotIsReleased(@TempDir Path tmp) throws Exception {
        RootAllocator allocator = new RootAllocator();
        try (TestRegion broker = TestRegion.create(tmp.resolve("r"), 1, SLOTS, SLOT_BYTES, 0)) {
            ShmRegion region = ShmRegion.map(broker.path);
            SlotRing ring = region.ring(0).attach();
            ArrowSlotView view = new ArrowSlotView(allocator);
            byte[][] want = rows(0, 10);
            broker.publish(0, 0, 0, want);
            view.load(ring, ring.tryNext());
            region.close(); // the owner is done; the loaded slot still pins the mapping
            assertThat(view.vector().get(1)).isEqualTo(want[1]);
            view.close();
            view.close();
            assertThat(broker.released(0)).isEqualTo(1);
            assertThat(region.retain()).isFalse();
        }
        assertThatCode(allocator::close).doesNotThrowAnyException();
    }
}
