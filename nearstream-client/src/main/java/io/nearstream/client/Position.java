package io.nearstream.client;

import java.io.Serializable;

/**
 * A read position inside a streamlet: the chunk starting at byte {@code offset} of segment {@code
 * segment} of group {@code group} (KerA's application offset). Ids start at 1; {@link #EARLIEST}
 * (all zero) means the earliest data the streamlet still holds. Unsigned on the wire; Java longs
 * and ints hold them as two's complement.
 */
public record Position(long group, long segment, int offset)
        implements Comparable<Position>, Serializable {

    /** The earliest retained data of a streamlet. */
    public static final Position EARLIEST = new Position(0, 0, 0);

    /** Bytes of a position on the wire: u64 group, u64 segment, u32 offset. */
    public static final int WIRE_BYTES = 20;

    public boolean isEarliest() {
        return group == 0 && segment == 0 && offset == 0;
    }

    @Override
    public int compareTo(Position o) {
        int c = Long.compareUnsigned(group, o.group);
        if (c != 0) {
            return c;
        }
        c = Long.compareUnsigned(segment, o.segment);
        return c != 0 ? c : Integer.compareUnsigned(offset, o.offset);
    }

    @Override
    public String toString() {
        return Long.toUnsignedString(group)
                + ":"
                + Long.toUnsignedString(segment)
                + ":"
                + Integer.toUnsignedString(offset);
    }

    /** Parses {@code G:S:O} as printed by {@link #toString()} and the CLI. */
    public static Position parse(String text) {
        String[] p = text.split(":");
        if (p.length != 3) {
            throw new IllegalArgumentException(
                    "position must be GROUP:SEGMENT:OFFSET, got " + text);
        }
        return new Position(
                Long.parseUnsignedLong(p[0]),
                Long.parseUnsignedLong(p[1]),
                Integer.parseUnsignedInt(p[2]));
    }
}
