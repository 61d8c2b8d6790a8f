package io.nearstream.client;

import java.util.Objects;

/**
 * Where a consumer starts reading a streamlet: the earliest retained record, the tail (only records
 * appended from now on), a committed {@link ReadPosition}, or the first chunk at or after a time.
 */
public final class StartingPosition {

    /** How the position is found. */
    public enum Kind {
        EARLIEST,
        LATEST,
        EXACT,
        TIMESTAMP
    }

    private static final StartingPosition EARLIEST = new StartingPosition(Kind.EARLIEST, null, 0);
    private static final StartingPosition LATEST = new StartingPosition(Kind.LATEST, null, 0);

    private final Kind kind;
    private final ReadPosition exact;
    private final long timestampMs;

    private StartingPosition(Kind kind, ReadPosition exact, long timestampMs) {
        this.kind = kind;
        this.exact = exact;
        this.timestampMs = timestampMs;
    }

    public static StartingPosition earliest() {
        return EARLIEST;
    }

    /** The streamlet's tail when the consumer starts (from Metadata). */
    public static StartingPosition latest() {
        return LATEST;
    }

    public static StartingPosition at(ReadPosition position) {
        return new StartingPosition(Kind.EXACT, Objects.requireNonNull(position), 0);
    }

    public static StartingPosition at(Position chunk, int recordsToSkip) {
        return at(new ReadPosition(chunk, recordsToSkip));
    }

    /** The first chunk whose first-record timestamp is {@code >= timestampMs} (LookupTimestamp). */
    public static StartingPosition timestamp(long timestampMs) {
        return new StartingPosition(Kind.TIMESTAMP, null, timestampMs);
    }

    public Kind kind() {
        return kind;
    }

    /** The position of an {@link Kind#EXACT} start. */
    public ReadPosition exact() {
        return exact;
    }

    /** The time of a {@link Kind#TIMESTAMP} start. */
    public long timestampMs() {
        return timestampMs;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof StartingPosition s
                && s.kind == kind
                && Objects.equals(s.exact, exact)
                && s.timestampMs == timestampMs;
    }

    @Override
    public int hashCode() {
        return Objects.hash(kind, exact, timestampMs);
    }

    @Override
    public String toString() {
        switch (kind) {
            case EXACT:
                return "StartingPosition[" + exact.chunk() + " skip " + exact.recordsToSkip() + "]";
            case TIMESTAMP:
                return "StartingPosition[timestamp " + timestampMs + "]";
            default:
                return "StartingPosition[" + kind + "]";
        }
    }
}
