package io.nearstream.flink.source.reader.push;

import io.nearstream.client.Position;
import io.nearstream.flink.source.reader.SplitCursor;
import io.nearstream.flink.source.split.NearstreamSplit;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;

/**
 * Push-specific state of a split: its position is also what a re-subscribe starts from, and the
 * pending-metrics refresh ({@link PushPending}, on another thread) reads it through {@link #next}.
 */
@Internal
final class PushCursor extends SplitCursor {

    /** {@link #position} for the pending-metrics refresh, which runs on another thread. */
    volatile Position next;

    /** Set by the pending refresh while the head is beyond {@link #next}; else null. */
    @Nullable volatile BeyondHead beyondHead;

    /** Guarded by this: set when the split leaves, so its pending gauge is not re-added. */
    boolean removed;

    /** Paused by watermark alignment (fetcher thread). */
    boolean paused;

    PushCursor(NearstreamSplit split) {
        super(split);
        this.next = position;
    }

    void advance(Position to) {
        position = to;
        next = to;
    }

    /** A Metadata answer, asked at {@code askedAtNanos}, had the head beyond the position. */
    record BeyondHead(Position position, Position head, long askedAtNanos) {}
}
