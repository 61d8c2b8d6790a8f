package io.nearstream.jni;

import static io.nearstream.jni.ShmLayout.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.jni.TestRegion.ViewRow;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.ViewVarBinaryVector;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link ArrowSlotView} on {@code binary_view} slots built by {@link TestRegion}. */
class ArrowSlotViewViewSlotsTest {
    private static final int SLOTS = 4;
    private static final int SLOT_BYTES = 64 * 1024;
    private static final String PREFIX = "nearstream-seg-77-";

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static final byte[] SHORT = bytes("short");
    private static final byte[] TWELVE = bytes("exactly-12-b");
    private static final byte[] COPIED = bytes("a record the broker copied into the slot");
    private static final byte[] IN_FILE = bytes("a record that stays in its segment file");

    /** Segment file 3: 100 filler bytes, then {@link #IN_FILE}. */
    private static Path segmentFile(Path dir) throws Exception {
        byte[] file = new byte[100 + IN_FILE.length];
        java.util.Arrays.fill(file, 0, 100, (byte) '.');
        System.arraycopy(IN_FILE, 0, file, 100, IN_FILE.length);
        return Files.write(dir.resolve(PREFIX + 3), file);
    }

    private static ViewRow[] rows() {
        return new ViewRow[] {
            ViewRow.copied(SHORT),
            ViewRow.inSegment(IN_FILE, 1, 100),
            ViewRow.copied(null),
            ViewRow.copied(COPIED),
            ViewRow.copied(TWELVE),
            ViewRow.copied(new byte[0]),
        };
    }

    @Test
    void loadsInlineRowsRowsInTheSlotAndRowsInASegmentFile(@TempDir Path tmp) throws Exception {
        Path file = segmentFile(tmp);
        long fileBytes = Files.size(file);
        RootAllocator allocator = new RootAllocator();
        try (TestRegion broker =
                        TestRegion.createView(tmp.resolve("r"), 1, SLOTS, SLOT_BYTES, 0, PREFIX);
                ShmRegion region = ShmRegion.map(broker.path)) {
            assertThat(region.slotFormat()).isEqualTo(SLOT_FORMAT_BINARY_VIEW);
            assertThat(region.segmentFilePrefix()).isEqualTo(PREFIX);
            assertThat(region.segmentFilePath(3)).isEqualTo(file);
            SegmentFileMappings files = region.segmentFiles();
            SlotRing ring = region.ring(0).attach();
            try (ArrowSlotView view = new ArrowSlotView(allocator)) {
                for (long p = 0; p < 3; p++) {
                    broker.awaitFree(0, 0, p);
                    broker.publishViews(0, 0, p, rows(), new long[][] {{3, fileBytes}});
                    long pos = ring.tryNext();
                    assertThat(view.load(ring, pos).getRowCount()).isEqualTo(6);
                    assertThat(view.isView()).isTrue();
                    assertThat(view.root().getSchema().getFields().get(0).getType())
                            .isEqualTo(ArrowType.BinaryView.INSTANCE);
                    ViewVarBinaryVector v = view.viewVector();
                    assertThat(v.get(0)).isEqualTo(SHORT);
                    assertThat(v.get(1)).isEqualTo(IN_FILE);
                    assertThat(v.isNull(2)).isTrue();
                    assertThat(v.get(3)).isEqualTo(COPIED);
                    assertThat(v.get(4)).isEqualTo(TWELVE);
                    assertThat(v.get(5)).isEmpty();
                    assertThat(v.getNullCount()).isEqualTo(1);
                    assertThatThrownBy(view::vector).isInstanceOf(IllegalStateException.class);

                    // Zero copy: views and buffer 0 are the slot, buffer 1 the file's mapping.
                    long payload = ring.payloadAddress(pos);
                    assertThat(v.getDataBuffer().memoryAddress())
                            .isEqualTo(payload + ring.descriptorInt(pos, DESC_OFFSETS_OFFSET));
                    ArrowBuf slotData = v.getDataBuffers().get(0);
                    assertThat(slotData.memoryAddress())
                            .isEqualTo(payload + ring.descriptorInt(pos, DESC_DATA_OFFSET));
                    assertThat(slotData.capacity()).isEqualTo(COPIED.length);
                    ArrowBuf segment = v.getDataBuffers().get(1);
                    assertThat(segment.capacity()).isEqualTo(fileBytes);
                    assertThat(segment.getByte(100)).isEqualTo(IN_FILE[0]);

                    // One mapping for every slot naming file 3, held while a slot is loaded.
                    assertThat(files.mappedCount()).isEqualTo(1);
                    assertThat(files.idleCount()).isZero();
                    assertThat(view.allocator().getAllocatedMemory())
                            .isEqualTo(SLOT_BYTES + fileBytes);
                }
                assertThat(broker.released(0)).isEqualTo(2);
                view.clear();
                assertThat(broker.released(0)).isEqualTo(3);
                assertThat(files.idleCount()).isEqualTo(1);
                assertThat(view.allocator().getAllocatedMemory()).isZero();
            }
        }
        assertThatCode(allocator::close).doesNotThrowAnyException();
    }

    @Test
    void aHeldSlotKeepsItsSegmentFileMappedAfterTheRegionCloses(@TempDir Path tmp)
            throws Exception {
        Path file = segmentFile(tmp);
        RootAllocator allocator = new RootAllocator();
        try (TestRegion broker =
                TestRegion.createView(tmp.resolve("r"), 1, SLOTS, SLOT_BYTES, 0, PREFIX)) {
            ShmRegion region = ShmRegion.map(broker.path);
            SlotRing ring = region.ring(0).attach();
            ArrowSlotView view = new ArrowSlotView(allocator);
            broker.publishViews(0, 0, 0, rows(), new long[][] {{3, Files.size(file)}});
            view.load(ring, ring.tryNext());
            Files.delete(file); // as the broker may, once the segment is dropped
            region.close();
            assertThat(region.segmentFiles().mappedCount()).isEqualTo(1);
            assertThat(view.viewVector().get(1)).isEqualTo(IN_FILE);
            view.close();
            // Idle now, kept for the broker's next regions (until a sweep sees the file gone).
            assertThat(region.segmentFiles().mappedCount()).isEqualTo(1);
            assertThat(region.segmentFiles().idleCount()).isEqualTo(1);
            assertThat(broker.released(0)).isEqualTo(1);
            assertThat(region.retain()).isFalse();
        }
        assertThatCode(allocator::close).doesNotThrowAnyException();
    }

    @Test
    void refusesADescriptorWhoseBufferTableLeavesTheSlot(@TempDir Path tmp) throws Exception {
        Path file = segmentFile(tmp);
        RootAllocator allocator = new RootAllocator();
        try (TestRegion broker =
                        TestRegion.createView(tmp.resolve("r"), 1, SLOTS, SLOT_BYTES, 0, PREFIX);
                ShmRegion region = ShmRegion.map(broker.path);
                ArrowSlotView view = new ArrowSlotView(allocator)) {
            SlotRing ring = region.ring(0).attach();
            broker.publishViews(0, 0, 0, rows(), new long[][] {{3, Files.size(file)}});
            broker.putDescriptorInt(0, 0, 0, DESC_BUFFERS_LENGTH, SLOT_BYTES);
            long pos = ring.tryNext();
            assertThatThrownBy(() -> view.load(ring, pos))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("slot 0 of ring 0: view descriptor out of bounds");
            broker.putDescriptorInt(0, 0, 0, DESC_BUFFERS_LENGTH, 16);
            broker.putDescriptorInt(0, 0, 0, DESC_OFFSETS_LENGTH, 5 * VIEW_BYTES); // 6 rows
            assertThatThrownBy(() -> view.load(ring, pos))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("views");
            assertThat(broker.released(0)).isZero();
            assertThat(region.segmentFiles().mappedCount()).isZero();
        }
        assertThatCode(allocator::close).doesNotThrowAnyException();
    }

    @Test
    void aSegmentFileThatCannotBeMappedFailsTheLoadWithoutLeakingAMapping(@TempDir Path tmp)
            throws Exception {
        Path file = segmentFile(tmp);
        long fileBytes = Files.size(file);
        RootAllocator allocator = new RootAllocator();
        try (TestRegion broker =
                        TestRegion.createView(tmp.resolve("r"), 1, SLOTS, SLOT_BYTES, 0, PREFIX);
                ShmRegion region = ShmRegion.map(broker.path);
                ArrowSlotView view = new ArrowSlotView(allocator)) {
            SlotRing ring = region.ring(0).attach();
            // Buffer 1 maps, buffer 2 (file 4) does not exist.
            broker.publishViews(0, 0, 0, rows(), new long[][] {{3, fileBytes}, {4, 64}});
            long pos = ring.tryNext();
            assertThatThrownBy(() -> view.load(ring, pos))
                    .isInstanceOf(UncheckedIOException.class)
                    .hasMessageContaining("slot 0 of ring 0: buffer 2 (segment file 4, 64 bytes)")
                    .hasRootCauseInstanceOf(NativeException.class);
            assertThat(region.segmentFiles().mappedCount()).isEqualTo(1);
            assertThat(region.segmentFiles().idleCount()).isEqualTo(1);
            assertThat(broker.released(0)).isZero();
            assertThat(view.allocator().getAllocatedMemory()).isZero();
        }
        assertThatCode(allocator::close).doesNotThrowAnyException();
    }

    @Test
    void refusesABinaryViewRegionWithoutAUsablePrefix(@TempDir Path tmp) throws Exception {
        try (TestRegion broker =
                TestRegion.createView(tmp.resolve("r"), 1, SLOTS, SLOT_BYTES, 0, "")) {
            assertThatThrownBy(() -> ShmRegion.map(broker.path))
                    .hasMessageContaining("without a segment_file_prefix");
        }
        try (TestRegion broker =
                TestRegion.createView(tmp.resolve("s"), 1, SLOTS, SLOT_BYTES, 0, "../seg-")) {
            assertThatThrownBy(() -> ShmRegion.map(broker.path))
                    .hasMessageContaining("segment_file_prefix has byte 0x2f at 2");
        }
        try (TestRegion broker =
                TestRegion.createView(tmp.resolve("t"), 1, SLOTS, SLOT_BYTES, 0, "x".repeat(64))) {
            assertThatThrownBy(() -> ShmRegion.map(broker.path))
                    .hasMessageContaining("not NUL-terminated");
        }
        try (TestRegion broker = TestRegion.create(tmp.resolve("u"), 1, SLOTS, SLOT_BYTES, 0)) {
            broker.buf.putInt(REGION_SLOT_FORMAT, 2);
            assertThatThrownBy(() -> ShmRegion.map(broker.path))
                    .hasMessageContaining("slot_format 2");
        }
    }
}
