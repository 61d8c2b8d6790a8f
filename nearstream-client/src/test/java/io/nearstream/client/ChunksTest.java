package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link ChunkBuilder}, {@link Chunks} and {@link ChunkCursor}. */
class ChunksTest {

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void crc32cCheckValue() {
        assertThat(Chunks.crc32c(utf8("123456789"), 0, 9)).isEqualTo(0xE3069283);
    }

    @Test
    void builderReproducesTheGoldenChunk() throws Exception {
        byte[] golden = Files.readAllBytes(ProtocolGoldenTest.protocolDir().resolve("chunk.bin"));
        ChunkBuilder b = new ChunkBuilder(16); // grows
        b.add(utf8("first")).add(new byte[0]).add(ByteBuffer.wrap(utf8("third record ü")));
        assertThat(b.size()).isEqualTo(80);
        assertThat(b.recordCount()).isEqualTo(3);
        assertThat(b.build(0x1122334455667788L, 0x0102030405060708L, 1_700_000_000_123L))
                .isEqualTo(golden);
        ChunkHeader h = Chunks.validate(golden);
        assertThat(h)
                .isEqualTo(
                        new ChunkHeader(
                                32,
                                1574014497,
                                0x1122334455667788L,
                                0x0102030405060708L,
                                1_700_000_000_123L,
                                3));
        assertThat(h.totalSize()).isEqualTo(80);
    }

    @Test
    void builderIsReusableAndSizeWithPredicts() {
        ChunkBuilder b = new ChunkBuilder();
        assertThat(b.isEmpty()).isTrue();
        assertThat(b.size()).isEqualTo(Chunks.HEADER_BYTES);
        assertThat(b.sizeWith(10)).isEqualTo(Chunks.HEADER_BYTES + 14);
        b.add(new byte[10]);
        assertThat(b.size()).isEqualTo(Chunks.HEADER_BYTES + 14);
        byte[] first = b.build(1, 1, 1);
        b.reset();
        assertThat(b.isEmpty()).isTrue();
        b.add(utf8("x"), 0, 1);
        byte[] second = b.build(1, 2, 2);
        assertThat(Chunks.validate(first).recordCount()).isEqualTo(1);
        assertThat(Chunks.validate(second).sequence()).isEqualTo(2);
        assertThat(Chunks.validate(new ChunkBuilder().build(0, 0, -5)).recordCount()).isZero();
    }

    @Test
    void addByteBufferLeavesItsPositionAlone() {
        ByteBuffer src = ByteBuffer.wrap(utf8("abcdef"));
        src.position(2);
        byte[] chunk = new ChunkBuilder().add(src).build(0, 0, 0);
        assertThat(src.position()).isEqualTo(2);
        ChunkCursor c = new ChunkCursor().reset(Position.EARLIEST, ByteBuffer.wrap(chunk));
        assertThat(c.nextChunk()).isTrue();
        assertThat(c.nextRecord()).isTrue();
        assertThat(new String(c.copyRecord(), StandardCharsets.UTF_8)).isEqualTo("cdef");
    }

    @Test
    void stampSequenceKeepsTheChunkValid() {
        byte[] chunk = new ChunkBuilder().add(utf8("r")).build(9, 0, 5);
        Chunks.stampSequence(chunk, 77);
        ChunkHeader h = Chunks.validate(chunk);
        assertThat(h.sequence()).isEqualTo(77);
        assertThat(h.producerId()).isEqualTo(9);
    }

    @Test
    void everyCorruptedByteIsDetected() {
        byte[] chunk = new ChunkBuilder().add(utf8("hello")).add(utf8("world")).build(3, 4, 5);
        for (int i = 0; i < chunk.length; i++) {
            byte[] bad = chunk.clone();
            bad[i] ^= 0x20;
            int at = i;
            assertThatThrownBy(() -> Chunks.validate(bad))
                    .as("byte %s flipped", at)
                    .isInstanceOf(NearstreamProtocolException.class)
                    .satisfies(
                            e ->
                                    assertThat(((NearstreamProtocolException) e).status())
                                            .isEqualTo(StatusCode.CORRUPT_CHUNK));
        }
        assertThatThrownBy(() -> Chunks.validate(java.util.Arrays.copyOf(chunk, 47)))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("48 bytes");
        assertThatThrownBy(() -> Chunks.validate(java.util.Arrays.copyOf(chunk, chunk.length + 1)))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("declares");
    }

    @Test
    void recordFramingAndCountAreChecked() {
        // A payload whose record length runs past the end, with CRCs recomputed so only the
        // framing is wrong.
        byte[] chunk = new ChunkBuilder().add(utf8("abc")).build(0, 0, 0);
        chunk[Chunks.HEADER_BYTES] = 9;
        ChunkBuilder.writeHeader(chunk, chunk.length - Chunks.HEADER_BYTES, 1, 0, 0, 0);
        assertThatThrownBy(() -> Chunks.validate(chunk))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("runs past");
        byte[] count = new ChunkBuilder().add(utf8("abc")).build(0, 0, 0);
        ChunkBuilder.writeHeader(count, count.length - Chunks.HEADER_BYTES, 2, 0, 0, 0);
        assertThatThrownBy(() -> Chunks.validate(count))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("declares 2");
        // Without payload verification the cursor still refuses to read past the payload (a
        // 12-byte payload could hold 3 empty records, so the count alone passes).
        byte[] short1 = new ChunkBuilder().add(utf8("abcdefgh")).build(0, 0, 0);
        ChunkBuilder.writeHeader(short1, short1.length - Chunks.HEADER_BYTES, 2, 0, 0, 0);
        ChunkCursor c = new ChunkCursor(false).reset(Position.EARLIEST, ByteBuffer.wrap(short1));
        assertThat(c.nextChunk()).isTrue();
        assertThat(c.nextRecord()).isTrue();
        assertThatThrownBy(c::nextRecord)
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("missing");
        // A count no payload could hold (or a u32 beyond int range) fails before any record is
        // read, so no reader sizes an array by it.
        for (int bogus : new int[] {1_000_000, -1}) {
            byte[] huge = new ChunkBuilder().add(utf8("abc")).build(0, 0, 0);
            ChunkBuilder.writeHeader(huge, huge.length - Chunks.HEADER_BYTES, bogus, 0, 0, 0);
            ChunkCursor cursor =
                    new ChunkCursor(false).reset(Position.EARLIEST, ByteBuffer.wrap(huge));
            assertThatThrownBy(cursor::nextChunk)
                    .isInstanceOf(NearstreamProtocolException.class)
                    .hasMessageContaining("has room for at most 1");
        }
    }

    @Test
    void cursorWalksAllChunksOfABlockWithTheirPositions() {
        List<byte[]> chunks = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            ChunkBuilder b = new ChunkBuilder();
            for (int r = 0; r <= i; r++) {
                b.add(utf8(i + "." + r));
            }
            chunks.add(b.build(1, i, 1000 + i));
        }
        int total = chunks.stream().mapToInt(x -> x.length).sum();
        // The block sits at offset 3 of a direct buffer, as in a response frame.
        ByteBuffer frame = ByteBuffer.allocateDirect(total + 10);
        frame.position(3);
        chunks.forEach(frame::put);
        frame.limit(3 + total).position(3);
        ChunkBlock block =
                new ChunkBlock(new Position(4, 9, 1000), frame.slice().asReadOnlyBuffer());

        ChunkCursor cursor = new ChunkCursor(block);
        int expectedOffset = 1000;
        List<String> records = new ArrayList<>();
        ByteBuffer firstView = null;
        for (int i = 0; i < 5; i++) {
            assertThat(cursor.nextChunk()).isTrue();
            assertThat(cursor.position()).isEqualTo(new Position(4, 9, expectedOffset));
            assertThat(cursor.header().firstTimestampMs()).isEqualTo(1000 + i);
            assertThat(cursor.recordCount()).isEqualTo(i + 1);
            assertThat(cursor.chunk().remaining()).isEqualTo(chunks.get(i).length);
            expectedOffset += chunks.get(i).length;
            while (cursor.nextRecord()) {
                ByteBuffer view = cursor.record();
                if (firstView == null) {
                    firstView = view;
                }
                assertThat(view).isSameAs(firstView); // no allocation per record
                assertThat(view.isReadOnly()).isTrue();
                assertThat(view.order()).isEqualTo(ByteOrder.LITTLE_ENDIAN);
                assertThat(view.remaining()).isEqualTo(cursor.recordLength());
                byte[] copy = new byte[cursor.recordLength() + 2];
                assertThat(cursor.copyRecord(copy, 2)).isEqualTo(cursor.recordLength());
                String s = new String(copy, 2, cursor.recordLength(), StandardCharsets.UTF_8);
                assertThat(s).isEqualTo(i + "." + cursor.recordIndex());
                records.add(s);
            }
            assertThat(cursor.nextRecord()).isFalse();
        }
        assertThat(cursor.nextChunk()).isFalse();
        assertThat(records).hasSize(15);
        assertThat(block.data().position()).isZero(); // the block is not consumed

        // Reset starts over; skipRecords resumes mid-chunk.
        cursor.reset(block);
        cursor.nextChunk();
        cursor.nextChunk();
        assertThat(cursor.skipRecords(1)).isEqualTo(1);
        assertThat(cursor.nextRecord()).isTrue();
        assertThat(cursor.recordIndex()).isEqualTo(1);
        assertThat(cursor.skipRecords(5)).isZero();
    }

    @Test
    void cursorRefusesAChunkCutByTheBlockEnd() {
        byte[] chunk = new ChunkBuilder().add(utf8("abcdef")).build(0, 0, 0);
        ChunkBlock cut =
                new ChunkBlock(Position.EARLIEST, ByteBuffer.wrap(chunk, 0, chunk.length - 1));
        ChunkCursor cursor = new ChunkCursor(cut);
        assertThatThrownBy(cursor::nextChunk)
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("declares");
        assertThatThrownBy(cursor::header).isInstanceOf(IllegalStateException.class);
        assertThat(new ChunkCursor().nextChunk()).isFalse();
    }
}
