package io.nearstream.flink.source.reader;

import io.nearstream.client.Position;
import io.nearstream.flink.source.split.NearstreamSplit;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;

/**
 * The read state of one assigned split, shared by the pull and the push reader so exact resume is
 * decided in one place: the next chunk to read, the chunk the split resumed at with the records of
 * it already emitted before the restore, and the stopping position of a bounded split.
 */
@Internal
public class SplitCursor {
    public final String splitId;
    public final int streamlet;
    @Nullable public final Position stop;
    private final Position resumePosition;
    private int recordsToSkip;
    public Position position;

    public SplitCursor(NearstreamSplit split) {
        this.splitId = split.splitId();
        this.streamlet = split.streamlet();
        this.stop = split.stoppingPosition().orElse(null);
        this.resumePosition = split.startingPosition();
        this.recordsToSkip = split.recordsToSkip();
        this.position = split.startingPosition();
    }

    /** Whether the chunk at {@code at} lies at or beyond the split's stopping position. */
    public boolean stopsAt(Position at) {
        return stop != null && at.compareTo(stop) >= 0;
    }

    /** Whether the split has read everything up to its stopping position. */
    public boolean finished() {
        return stopsAt(position);
    }

    /**
     * The records to skip at the start of the chunk at {@code at}: only the chunk the split resumed
     * at had records emitted already, and only the first chunk read can be that one.
     */
    public int takeRecordsToSkip(Position at) {
        if (recordsToSkip == 0) {
            return 0;
        }
        int skip = at.equals(resumePosition) ? recordsToSkip : 0;
        recordsToSkip = 0;
        return skip;
    }
}
