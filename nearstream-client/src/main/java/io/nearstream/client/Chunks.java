package io.nearstream.client;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * The chunk format (docs/protocol.md, "Chunk format"): constants, header parsing and full
 * validation. A chunk is a 48-byte header and a payload of length-prefixed records; the same bytes
 * are appended, stored and fetched.
 *
 * <pre>{@code
 * ChunkHeader h = Chunks.validate(bytes); // header, CRCs and record framing
 * }</pre>
 */
public final class Chunks {

    /** {@code "NSCK"} read as a little-endian u32. */
    public static final int MAGIC = 0x4B43534E;

    public static final int VERSION = 1;
    public static final int HEADER_BYTES = 48;

    /** The u32 length before each record. */
    public static final int RECORD_PREFIX_BYTES = 4;

    static final int OFFSET_MAGIC = 0;
    static final int OFFSET_VERSION = 4;
    static final int OFFSET_FLAGS = 5;
    static final int OFFSET_HEADER_LENGTH = 6;
    static final int OFFSET_PAYLOAD_LENGTH = 8;
    static final int OFFSET_PAYLOAD_CRC = 12;
    static final int OFFSET_PRODUCER_ID = 16;
    static final int OFFSET_SEQUENCE = 24;
    static final int OFFSET_FIRST_TIMESTAMP = 32;
    static final int OFFSET_RECORD_COUNT = 40;
    static final int OFFSET_HEADER_CRC = 44;

    private Chunks() {}

    /** Parses and checks the header of the chunk at {@code chunk[0..]}. */
    public static ChunkHeader parseHeader(byte[] chunk) {
        return parseHeader(ByteBuffer.wrap(chunk), 0);
    }

    /**
     * Parses the header of the chunk at absolute index {@code offset} of {@code buf} (its position
     * and byte order are ignored and left unchanged): at least 48 bytes, magic, version, flags 0,
     * header length 48 and the header CRC. Checks nothing beyond the header.
     *
     * @throws NearstreamProtocolException with {@link StatusCode#CORRUPT_CHUNK} when it is wrong
     */
    public static ChunkHeader parseHeader(ByteBuffer buf, int offset) {
        if (offset < 0 || buf.limit() - offset < HEADER_BYTES) {
            throw NearstreamProtocolException.corruptChunk(
                    "chunk header needs 48 bytes, "
                            + Math.max(0, buf.limit() - offset)
                            + " left at offset "
                            + offset);
        }
        ByteBuffer b = buf.order() == ByteOrder.LITTLE_ENDIAN ? buf : littleEndian(buf);
        int magic = b.getInt(offset + OFFSET_MAGIC);
        if (magic != MAGIC) {
            throw NearstreamProtocolException.corruptChunk(
                    String.format("bad chunk magic 0x%08X at offset %d", magic, offset));
        }
        int version = b.get(offset + OFFSET_VERSION) & 0xFF;
        if (version != VERSION) {
            throw NearstreamProtocolException.corruptChunk("unsupported chunk version " + version);
        }
        int flags = b.get(offset + OFFSET_FLAGS) & 0xFF;
        if (flags != 0) {
            throw NearstreamProtocolException.corruptChunk(
                    "chunk flags " + flags + " (compression is not supported)");
        }
        int headerLength = b.getShort(offset + OFFSET_HEADER_LENGTH) & 0xFFFF;
        if (headerLength != HEADER_BYTES) {
            throw NearstreamProtocolException.corruptChunk("chunk header length " + headerLength);
        }
        int headerCrc = b.getInt(offset + OFFSET_HEADER_CRC);
        int actual = crc32c(b, offset, OFFSET_HEADER_CRC);
        if (headerCrc != actual) {
            throw NearstreamProtocolException.corruptChunk(
                    String.format(
                            "chunk header CRC 0x%08X does not match 0x%08X at offset %d",
                            headerCrc, actual, offset));
        }
        int payloadLength = b.getInt(offset + OFFSET_PAYLOAD_LENGTH);
        if (payloadLength < 0 || payloadLength > Integer.MAX_VALUE - HEADER_BYTES) {
            throw NearstreamProtocolException.corruptChunk(
                    "chunk payload length " + Integer.toUnsignedString(payloadLength));
        }
        return new ChunkHeader(
                payloadLength,
                b.getInt(offset + OFFSET_PAYLOAD_CRC),
                b.getLong(offset + OFFSET_PRODUCER_ID),
                b.getLong(offset + OFFSET_SEQUENCE),
                b.getLong(offset + OFFSET_FIRST_TIMESTAMP),
                b.getInt(offset + OFFSET_RECORD_COUNT));
    }

    /** Fully validates {@code chunk} (the whole array is one chunk); returns its header. */
    public static ChunkHeader validate(byte[] chunk) {
        return validate(ByteBuffer.wrap(chunk), 0, chunk.length);
    }

    /**
     * Fully validates the chunk of {@code length} bytes at absolute index {@code offset}: the
     * header, 48 + payload length = {@code length}, the payload CRC32C and the record framing
     * (exactly record_count records ending at the payload's end).
     */
    public static ChunkHeader validate(ByteBuffer buf, int offset, int length) {
        ChunkHeader h = parseHeader(buf, offset);
        if (h.totalSize() != length) {
            throw NearstreamProtocolException.corruptChunk(
                    "chunk of " + length + " bytes declares " + h.totalSize());
        }
        checkPayload(buf, offset, h);
        return h;
    }

    /**
     * Checks the payload of a chunk whose header was parsed: it fits in {@code buf}, its CRC and
     * its record framing.
     */
    static void checkPayload(ByteBuffer buf, int offset, ChunkHeader h) {
        if ((long) offset + h.totalSize() > buf.limit()) {
            throw NearstreamProtocolException.corruptChunk(
                    "chunk at offset "
                            + offset
                            + " declares "
                            + h.totalSize()
                            + " bytes but only "
                            + (buf.limit() - offset)
                            + " are there");
        }
        int payloadStart = offset + HEADER_BYTES;
        int crc = crc32c(buf, payloadStart, h.payloadLength());
        if (crc != h.payloadCrc()) {
            throw NearstreamProtocolException.corruptChunk(
                    String.format(
                            "chunk payload CRC 0x%08X does not match 0x%08X at offset %d",
                            h.payloadCrc(), crc, offset));
        }
        ByteBuffer b = buf.order() == ByteOrder.LITTLE_ENDIAN ? buf : littleEndian(buf);
        int end = payloadStart + h.payloadLength();
        int p = payloadStart;
        long records = 0;
        while (p < end) {
            if (end - p < RECORD_PREFIX_BYTES) {
                throw NearstreamProtocolException.corruptChunk(
                        "partial record length at payload byte " + (p - payloadStart));
            }
            int len = b.getInt(p);
            p += RECORD_PREFIX_BYTES;
            if (len < 0 || len > end - p) {
                throw NearstreamProtocolException.corruptChunk(
                        "record "
                                + records
                                + " of "
                                + Integer.toUnsignedString(len)
                                + " bytes runs past the payload's end");
            }
            p += len;
            records++;
        }
        if (records != Integer.toUnsignedLong(h.recordCount())) {
            throw NearstreamProtocolException.corruptChunk(
                    "chunk holds "
                            + records
                            + " records but declares "
                            + Integer.toUnsignedString(h.recordCount()));
        }
    }

    /**
     * Rewrites the sequence number of an encoded chunk in place, with its header CRC (the payload
     * and its CRC are unchanged).
     */
    static void stampSequence(byte[] chunk, long sequence) {
        ByteBuffer h = ByteBuffer.wrap(chunk).order(ByteOrder.LITTLE_ENDIAN);
        h.putLong(OFFSET_SEQUENCE, sequence);
        h.putInt(OFFSET_HEADER_CRC, crc32c(chunk, 0, OFFSET_HEADER_CRC));
    }

    /** CRC32C of {@code length} bytes at absolute index {@code offset}; {@code buf} unchanged. */
    static int crc32c(ByteBuffer buf, int offset, int length) {
        CRC32C crc = new CRC32C();
        ByteBuffer d = buf.duplicate();
        d.limit(offset + length).position(offset);
        crc.update(d);
        return (int) crc.getValue();
    }

    static int crc32c(byte[] bytes, int offset, int length) {
        CRC32C crc = new CRC32C();
        crc.update(bytes, offset, length);
        return (int) crc.getValue();
    }

    private static ByteBuffer littleEndian(ByteBuffer buf) {
        return buf.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    }
}
