package io.nearstream.client;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * Accumulates records into one chunk (docs/protocol.md, "Chunk format"). Reusable: {@link #reset()}
 * keeps the buffer.
 *
 * <pre>{@code
 * ChunkBuilder builder = new ChunkBuilder();
 * builder.add("a".getBytes(UTF_8));
 * builder.add(ByteBuffer.wrap(other));
 * byte[] chunk = builder.build(producerId, sequence, System.currentTimeMillis());
 * }</pre>
 *
 * <p>Not thread-safe.
 */
public final class ChunkBuilder {

    private byte[] buf;
    private int size = Chunks.HEADER_BYTES;
    private int recordCount;

    public ChunkBuilder() {
        this(1024);
    }

    /** A builder whose buffer starts with room for {@code initialCapacity} chunk bytes. */
    public ChunkBuilder(int initialCapacity) {
        buf = new byte[Math.max(Chunks.HEADER_BYTES + 64, initialCapacity)];
    }

    /** Appends a record (copied). */
    public ChunkBuilder add(byte[] record) {
        return add(record, 0, record.length);
    }

    /** Appends {@code length} bytes of {@code record} from {@code offset} (copied). */
    public ChunkBuilder add(byte[] record, int offset, int length) {
        int at = reserve(length);
        System.arraycopy(record, offset, buf, at, length);
        return this;
    }

    /** Appends the remaining bytes of {@code record} (copied; its position is not changed). */
    public ChunkBuilder add(ByteBuffer record) {
        int length = record.remaining();
        int at = reserve(length);
        record.duplicate().get(buf, at, length);
        return this;
    }

    private int reserve(int length) {
        if (length < 0) {
            throw new IllegalArgumentException("negative record length " + length);
        }
        long newSize = (long) size + Chunks.RECORD_PREFIX_BYTES + length;
        if (newSize > Integer.MAX_VALUE - 16) {
            throw new IllegalArgumentException("chunk would exceed 2 GiB");
        }
        if (newSize > buf.length) {
            buf =
                    Arrays.copyOf(
                            buf,
                            (int)
                                    Math.min(
                                            Integer.MAX_VALUE - 16,
                                            Math.max(newSize, 2L * buf.length)));
        }
        putIntLE(buf, size, length);
        int at = size + Chunks.RECORD_PREFIX_BYTES;
        size = (int) newSize;
        recordCount++;
        return at;
    }

    /** Bytes the chunk has so far, header included. */
    public int size() {
        return size;
    }

    /** The chunk's size after adding a record of {@code recordBytes} bytes. */
    public int sizeWith(int recordBytes) {
        return size + Chunks.RECORD_PREFIX_BYTES + recordBytes;
    }

    public int recordCount() {
        return recordCount;
    }

    public boolean isEmpty() {
        return recordCount == 0;
    }

    /**
     * Returns the chunk: header (CRCs computed) and the records added so far. The builder keeps its
     * records; call {@link #reset()} to start the next chunk.
     */
    public byte[] build(long producerId, long sequence, long firstTimestampMs) {
        byte[] chunk = Arrays.copyOf(buf, size);
        writeHeader(
                chunk,
                size - Chunks.HEADER_BYTES,
                recordCount,
                producerId,
                sequence,
                firstTimestampMs);
        return chunk;
    }

    /** Forgets the records; the buffer is kept for the next chunk. */
    public void reset() {
        size = Chunks.HEADER_BYTES;
        recordCount = 0;
    }

    /**
     * Writes a chunk header into {@code chunk[0..48)} for the payload at {@code chunk[48..48 +
     * payloadLength)}. Also used to re-stamp an existing chunk (e.g. a new sequence).
     */
    static void writeHeader(
            byte[] chunk,
            int payloadLength,
            int recordCount,
            long producerId,
            long sequence,
            long firstTimestampMs) {
        ByteBuffer h = ByteBuffer.wrap(chunk).order(ByteOrder.LITTLE_ENDIAN);
        h.putInt(Chunks.OFFSET_MAGIC, Chunks.MAGIC);
        h.put(Chunks.OFFSET_VERSION, (byte) Chunks.VERSION);
        h.put(Chunks.OFFSET_FLAGS, (byte) 0);
        h.putShort(Chunks.OFFSET_HEADER_LENGTH, (short) Chunks.HEADER_BYTES);
        h.putInt(Chunks.OFFSET_PAYLOAD_LENGTH, payloadLength);
        h.putInt(
                Chunks.OFFSET_PAYLOAD_CRC,
                Chunks.crc32c(chunk, Chunks.HEADER_BYTES, payloadLength));
        h.putLong(Chunks.OFFSET_PRODUCER_ID, producerId);
        h.putLong(Chunks.OFFSET_SEQUENCE, sequence);
        h.putLong(Chunks.OFFSET_FIRST_TIMESTAMP, firstTimestampMs);
        h.putInt(Chunks.OFFSET_RECORD_COUNT, recordCount);
        h.putInt(Chunks.OFFSET_HEADER_CRC, Chunks.crc32c(chunk, 0, Chunks.OFFSET_HEADER_CRC));
    }

    private static void putIntLE(byte[] b, int at, int v) {
        b[at] = (byte) v;
        b[at + 1] = (byte) (v >>> 8);
        b[at + 2] = (byte) (v >>> 16);
        b[at + 3] = (byte) (v >>> 24);
    }
}
