package io.nearstream.flink.source.split;

import io.nearstream.client.Position;
import org.apache.flink.annotation.Internal;

/**
 * The mutable read state of a {@link NearstreamSplit} inside a source reader: the chunk being
 * emitted and how many of its records were emitted already. Updated by the record emitter after
 * every record, so a checkpoint taken between two records resumes exactly between them.
 */
@Internal
public final class NearstreamSplitState {

    private final NearstreamSplit split;
    private Position chunkPosition;
    private int recordsEmitted;

    public NearstreamSplitState(NearstreamSplit split) {
        this.split = split;
        this.chunkPosition = split.startingPosition();
        this.recordsEmitted = split.recordsToSkip();
    }

    public NearstreamSplit split() {
        return split;
    }

    public Position chunkPosition() {
        return chunkPosition;
    }

    public int recordsEmitted() {
        return recordsEmitted;
    }

    /**
     * Called after the record at {@code index} of the chunk at {@code chunk} was emitted. After a
     * chunk's last record the state still names that chunk (with all its records to skip): a
     * restore fetches it once more and skips it whole.
     */
    public void recordEmitted(Position chunk, int index) {
        chunkPosition = chunk;
        recordsEmitted = index + 1;
    }

    /** The split to checkpoint: resumes at the current chunk, skipping what was emitted. */
    public NearstreamSplit toSplit() {
        return split.withStartingPosition(chunkPosition, recordsEmitted);
    }
}
