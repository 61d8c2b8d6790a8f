package io.nearstream.client;

/**
 * Where a consumer resumes in a streamlet: the chunk at {@code chunk} (all-zero = earliest) after
 * skipping its first {@code recordsToSkip} records. This is what a consumer commits.
 */
public record ReadPosition(Position chunk, int recordsToSkip) {
    public ReadPosition {
        if (recordsToSkip < 0) {
            throw new IllegalArgumentException("recordsToSkip must be >= 0, got " + recordsToSkip);
        }
    }

    /** The earliest retained record. */
    public static final ReadPosition EARLIEST = new ReadPosition(Position.EARLIEST, 0);
}
