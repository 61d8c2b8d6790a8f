package io.nearstream.client;

import io.netty.buffer.ByteBuf;
import java.nio.charset.StandardCharsets;

/**
 * Bounds-checked little-endian reads of one message body: every read and every count is checked
 * against the bytes that remain, so malformed input fails with a {@link
 * NearstreamProtocolException} naming the message and field, never with an index exception.
 */
final class WireReader {
    private final ByteBuf buf;
    private final String what;

    /**
     * Reads {@code buf} from its reader index to its writer index; {@code what} names the message.
     */
    WireReader(ByteBuf buf, String what) {
        this.buf = buf;
        this.what = what;
    }

    int remaining() {
        return buf.readableBytes();
    }

    ByteBuf buffer() {
        return buf;
    }

    private void need(int bytes, String field) {
        if (buf.readableBytes() < bytes) {
            throw NearstreamProtocolException.malformed(
                    what
                            + ": truncated at "
                            + field
                            + " (needs "
                            + bytes
                            + " bytes, "
                            + buf.readableBytes()
                            + " left)");
        }
    }

    int u8(String field) {
        need(1, field);
        return buf.readUnsignedByte();
    }

    int u16(String field) {
        need(2, field);
        return buf.readUnsignedShortLE();
    }

    /** A {@code u32} as stored in a Java int (two's complement above 2^31 - 1). */
    int u32(String field) {
        need(4, field);
        return buf.readIntLE();
    }

    long u64(String field) {
        need(8, field);
        return buf.readLongLE();
    }

    long i64(String field) {
        return u64(field);
    }

    boolean bool(String field) {
        int v = u8(field);
        if (v > 1) {
            throw NearstreamProtocolException.malformed(
                    what + ": " + field + " is a bool but holds " + v);
        }
        return v == 1;
    }

    String str(String field) {
        int n = u16(field);
        need(n, field);
        // Invalid UTF-8 (e.g. a message cut mid-sequence) is replaced, never refused.
        String s = buf.toString(buf.readerIndex(), n, StandardCharsets.UTF_8);
        buf.skipBytes(n);
        return s;
    }

    Position position(String field) {
        need(Position.WIRE_BYTES, field);
        return new Position(buf.readLongLE(), buf.readLongLE(), buf.readIntLE());
    }

    /**
     * A {@code u32} element count, checked against the bytes left: {@code count × minElementBytes}
     * must fit, so a huge count in a short body is refused before anything is allocated.
     */
    int count(String field, int minElementBytes) {
        int raw = u32(field);
        long count = Integer.toUnsignedLong(raw);
        if (count * Math.max(1, minElementBytes) > buf.readableBytes()) {
            throw NearstreamProtocolException.malformed(
                    what
                            + ": "
                            + field
                            + " = "
                            + count
                            + " does not fit in the "
                            + buf.readableBytes()
                            + " bytes left");
        }
        return (int) count;
    }

    /**
     * A {@code u8} element count, checked against the bytes left as {@link #count} checks a {@code
     * u32} one.
     */
    int countU8(String field, int minElementBytes) {
        int count = u8(field);
        if ((long) count * Math.max(1, minElementBytes) > buf.readableBytes()) {
            throw NearstreamProtocolException.malformed(
                    what
                            + ": "
                            + field
                            + " = "
                            + count
                            + " does not fit in the "
                            + buf.readableBytes()
                            + " bytes left");
        }
        return count;
    }

    /** A {@code Blob}: returns the index of its first byte and skips it; {@link #lastLength()}. */
    int blob(String field) {
        int raw = u32(field);
        if (raw < 0 || raw > buf.readableBytes()) {
            throw NearstreamProtocolException.malformed(
                    what
                            + ": "
                            + field
                            + " length "
                            + Integer.toUnsignedString(raw)
                            + " runs past the end ("
                            + buf.readableBytes()
                            + " bytes left)");
        }
        int index = buf.readerIndex();
        lastLength = raw;
        buf.skipBytes(raw);
        return index;
    }

    private int lastLength;

    /** The length of the blob read last. */
    int lastLength() {
        return lastLength;
    }

    /** Refuses trailing bytes after the last field. */
    void end() {
        if (buf.isReadable()) {
            throw NearstreamProtocolException.malformed(
                    what + ": " + buf.readableBytes() + " trailing bytes after the last field");
        }
    }
}
