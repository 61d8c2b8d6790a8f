package io.nearstream.jni;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Real segment files in a temporary directory; whether a file is mapped is read from {@code
 * /proc/self/maps}, the kernel's own list.
 */
class SegmentFileMappingsTest {
    private static final String PREFIX = "nearstream-seg-test-";

    private static Path segment(Path dir, long number, String contents) throws IOException {
        return Files.write(
                dir.resolve(PREFIX + number), contents.getBytes(StandardCharsets.US_ASCII));
    }

    private static SegmentFileMappings mappings(Path dir, int maxIdle) {
        return new SegmentFileMappings(n -> dir.resolve(PREFIX + n), maxIdle, Long.MAX_VALUE, 1);
    }

    /** How many mappings of {@code file} the process has. */
    private static long mappingsOf(Path file) throws IOException {
        String name = file.toAbsolutePath().toString();
        try (Stream<String> maps = Files.lines(Path.of("/proc/self/maps"))) {
            return maps.filter(l -> l.endsWith(name) || l.endsWith(name + " (deleted)")).count();
        }
    }

    private static String read(SegmentFileMappings.Mapping m) throws IOException {
        ByteBuffer b = Natives.directBuffer(m.address(), m.length());
        byte[] bytes = new byte[(int) m.length()];
        b.get(bytes);
        return new String(bytes, StandardCharsets.US_ASCII);
    }

    @Test
    void oneMappingPerFileNumberCountedByReference(@TempDir Path dir) throws Exception {
        Path file = segment(dir, 1, "segment one bytes");
        try (SegmentFileMappings files = mappings(dir, 4)) {
            SegmentFileMappings.Mapping a = files.acquire(1, 17);
            SegmentFileMappings.Mapping b = files.acquire(1, 17);
            assertThat(b).isSameAs(a);
            assertThat(read(a)).isEqualTo("segment one bytes");
            assertThat(mappingsOf(file)).isEqualTo(1);
            files.release(a);
            assertThat(files.idleCount()).isZero();
            files.release(b);
            // Idle, still mapped: the next slot naming file 1 finds it.
            assertThat(files.idleCount()).isEqualTo(1);
            assertThat(mappingsOf(file)).isEqualTo(1);
            assertThat(files.acquire(1, 17)).isSameAs(a);
            assertThat(files.idleCount()).isZero();
            files.release(a);
            assertThatThrownBy(() -> files.release(a))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("released too often");
        }
        assertThat(mappingsOf(file)).isZero();
    }

    @Test
    void evictsTheLongestIdleBeyondTheBoundButNeverAReferencedOne(@TempDir Path dir)
            throws Exception {
        Path one = segment(dir, 1, "1111");
        Path two = segment(dir, 2, "2222");
        Path three = segment(dir, 3, "3333");
        try (SegmentFileMappings files = mappings(dir, 1)) {
            SegmentFileMappings.Mapping held = files.acquire(1, 4);
            SegmentFileMappings.Mapping m2 = files.acquire(2, 4);
            SegmentFileMappings.Mapping m3 = files.acquire(3, 4);
            files.release(m2);
            files.release(m3); // two idle, one allowed: 2 (idle longest) goes
            assertThat(mappingsOf(two)).isZero();
            assertThat(mappingsOf(three)).isEqualTo(1);
            assertThat(files.mappedCount()).isEqualTo(2);
            assertThat(files.idleCount()).isEqualTo(1);
            // The referenced mapping outlived both evictions.
            assertThat(mappingsOf(one)).isEqualTo(1);
            assertThat(read(held)).isEqualTo("1111");
            files.release(held); // now 1 is the youngest idle one; 3 goes
            assertThat(mappingsOf(three)).isZero();
            assertThat(mappingsOf(one)).isEqualTo(1);
        }
        assertThat(mappingsOf(one)).isZero();
    }

    @Test
    void boundsTheIdleBytesToo(@TempDir Path dir) throws Exception {
        Path one = segment(dir, 1, "1111");
        Path two = segment(dir, 2, "2222");
        Path three = segment(dir, 3, "3333");
        try (SegmentFileMappings files =
                new SegmentFileMappings(n -> dir.resolve(PREFIX + n), 100, 8, 1)) {
            for (long n = 1; n <= 3; n++) {
                files.release(files.acquire(n, 4));
            }
            // 12 idle bytes, 8 allowed: the longest idle goes.
            assertThat(mappingsOf(one)).isZero();
            assertThat(mappingsOf(two)).isEqualTo(1);
            assertThat(mappingsOf(three)).isEqualTo(1);
        }
    }

    @Test
    void anIdleMappingOfAFileTheBrokerUnlinkedIsUnmappedAtTheNextSweep(@TempDir Path dir)
            throws Exception {
        Path one = segment(dir, 1, "gone soon");
        segment(dir, 2, "stays");
        segment(dir, 3, "next");
        // Sweeps whenever a new file is mapped.
        try (SegmentFileMappings files =
                new SegmentFileMappings(n -> dir.resolve(PREFIX + n), 100, 1 << 20, 1, 0)) {
            files.release(files.acquire(1, 9));
            SegmentFileMappings.Mapping held = files.acquire(2, 5);
            Files.delete(one);
            assertThat(mappingsOf(one)).isEqualTo(1); // the kernel keeps it for our mapping
            files.release(files.acquire(3, 4));
            assertThat(mappingsOf(one)).isZero();
            assertThat(read(held)).isEqualTo("stays");
            files.release(held);
            assertThat(files.mappedCount()).isEqualTo(2);
        }
    }

    @Test
    void oneSharedInstancePerBrokerUntilAnotherEpochTakesItsNames(@TempDir Path dir)
            throws Exception {
        Path file = segment(dir, 1, "epoch one");
        SegmentFileMappings first = SegmentFileMappings.shared(dir, PREFIX, 7);
        assertThat(SegmentFileMappings.shared(dir, PREFIX, 7)).isSameAs(first);
        assertThat(SegmentFileMappings.shared(dir, "nearstream-seg-other-", 7)).isNotSameAs(first);
        first.release(first.acquire(1, 9)); // idle: kept for the broker's next region
        assertThat(mappingsOf(file)).isEqualTo(1);

        // A broker restarted under the same pid: same names, other files.
        SegmentFileMappings second = SegmentFileMappings.shared(dir, PREFIX, 8);
        assertThat(second).isNotSameAs(first);
        assertThat(mappingsOf(file)).isZero();

        // A broker that exited (its files unlinked): its idle mappings go when any other
        // broker's mappings are asked for, since no acquire of its own will sweep them.
        Path other = segment(dir, 1 + 0, "x");
        SegmentFileMappings gone = SegmentFileMappings.shared(dir, "nearstream-seg-gone-", 1);
        Path goneFile = Files.copy(other, dir.resolve("nearstream-seg-gone-1"));
        gone.release(gone.acquire(1, 1));
        Files.delete(goneFile);
        assertThat(mappingsOf(goneFile)).isEqualTo(1);
        SegmentFileMappings.shared(dir, PREFIX, 8);
        assertThat(mappingsOf(goneFile)).isZero();
        second.close();
    }

    @Test
    void closeUnmapsIdleMappingsNowAndHeldOnesAtTheirLastRelease(@TempDir Path dir)
            throws Exception {
        Path one = segment(dir, 1, "still readable");
        Path two = segment(dir, 2, "idle");
        SegmentFileMappings files = mappings(dir, 8);
        SegmentFileMappings.Mapping held = files.acquire(1, 14);
        files.release(files.acquire(2, 4));
        Files.delete(one); // the broker unlinked it; the mapping keeps its memory
        files.close();
        files.close();
        assertThat(mappingsOf(two)).isZero();
        assertThat(mappingsOf(one)).isEqualTo(1);
        assertThat(read(held)).isEqualTo("still readable");
        assertThatThrownBy(() -> files.acquire(2, 4))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("closed");
        files.release(held);
        assertThat(mappingsOf(one)).isZero();
        assertThat(files.mappedCount()).isZero();
    }

    @Test
    void refusesAFileShorterThanTheSlotSaysAndKeepsNothingMapped(@TempDir Path dir)
            throws Exception {
        Path file = segment(dir, 5, "short");
        try (SegmentFileMappings files = mappings(dir, 8)) {
            assertThatThrownBy(() -> files.acquire(5, 4096))
                    .isInstanceOf(NativeException.class)
                    .hasMessageContaining("5 bytes, 4096 requested");
            assertThatThrownBy(() -> files.acquire(6, 1))
                    .isInstanceOfSatisfying(
                            NativeException.class,
                            e -> assertThat(e.operation()).contains("O_RDONLY"));
            assertThatThrownBy(() -> files.acquire(0, 1)).isInstanceOf(IOException.class);
            assertThat(files.mappedCount()).isZero();
            assertThat(mappingsOf(file)).isZero();
        }
    }

    @Test
    void mapsReadOnly(@TempDir Path dir) throws Exception {
        segment(dir, 1, "abcd");
        try (SegmentFileMappings files = mappings(dir, 8)) {
            SegmentFileMappings.Mapping m = files.acquire(1, 4);
            List<String> lines;
            try (Stream<String> maps = Files.lines(Path.of("/proc/self/maps"))) {
                String name = dir.resolve(PREFIX + 1).toAbsolutePath().toString();
                lines = maps.filter(l -> l.endsWith(name)).toList();
            }
            assertThat(lines).hasSize(1);
            assertThat(lines.get(0).split(" ")[1]).isEqualTo("r--s");
            files.release(m);
        }
    }
}
