package io.nearstream.flink.source.split;

import static org.apache.flink.util.Preconditions.checkArgument;
import static org.apache.flink.util.Preconditions.checkNotNull;

import io.nearstream.client.Position;
import java.util.Objects;
import java.util.Optional;
import javax.annotation.Nullable;
import org.apache.flink.annotation.PublicEvolving;
import org.apache.flink.api.connector.source.SourceSplit;

/**
 * One streamlet of a stream, read from {@code startingPosition} on: the chunk at that position,
 * minus its first {@code recordsToSkip} records (already emitted before a checkpoint), then every
 * following chunk, up to (excluding) the chunk at {@code stoppingPosition} when there is one.
 *
 * <p>Nearstream assigns no per-record offsets, so a position inside a streamlet is a chunk position
 * plus a record count: this pair is what makes resuming from a checkpoint exact.
 */
@PublicEvolving
public final class NearstreamSplit implements SourceSplit {

    private final String stream;
    private final int streamlet;
    private final Position startingPosition;
    private final int recordsToSkip;
    @Nullable private final Position stoppingPosition;

    public NearstreamSplit(
            String stream,
            int streamlet,
            Position startingPosition,
            int recordsToSkip,
            @Nullable Position stoppingPosition) {
        this.stream = checkNotNull(stream, "stream");
        checkArgument(streamlet >= 0, "streamlet must be >= 0, got %s", streamlet);
        checkArgument(recordsToSkip >= 0, "recordsToSkip must be >= 0, got %s", recordsToSkip);
        this.streamlet = streamlet;
        this.startingPosition = checkNotNull(startingPosition, "startingPosition");
        this.recordsToSkip = recordsToSkip;
        this.stoppingPosition = stoppingPosition;
    }

    /** The split id of a streamlet: {@code <stream>-<streamlet>}. */
    public static String splitId(String stream, int streamlet) {
        return stream + "-" + streamlet;
    }

    @Override
    public String splitId() {
        return splitId(stream, streamlet);
    }

    public String stream() {
        return stream;
    }

    public int streamlet() {
        return streamlet;
    }

    /** The chunk to start at; {@link Position#EARLIEST} is the streamlet's oldest retained data. */
    public Position startingPosition() {
        return startingPosition;
    }

    /** How many records of the starting chunk were emitted already and must be skipped. */
    public int recordsToSkip() {
        return recordsToSkip;
    }

    /** The chunk position where reading ends (exclusive); empty for an unbounded split. */
    public Optional<Position> stoppingPosition() {
        return Optional.ofNullable(stoppingPosition);
    }

    /** The same split resuming at {@code position}, skipping its first {@code skip} records. */
    public NearstreamSplit withStartingPosition(Position position, int skip) {
        return new NearstreamSplit(stream, streamlet, position, skip, stoppingPosition);
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof NearstreamSplit)) {
            return false;
        }
        NearstreamSplit that = (NearstreamSplit) o;
        return streamlet == that.streamlet
                && recordsToSkip == that.recordsToSkip
                && stream.equals(that.stream)
                && startingPosition.equals(that.startingPosition)
                && Objects.equals(stoppingPosition, that.stoppingPosition);
    }

    @Override
    public int hashCode() {
        return Objects.hash(stream, streamlet, startingPosition, recordsToSkip, stoppingPosition);
    }

    @Override
    public String toString() {
        return "NearstreamSplit{"
                + splitId()
                + ", start="
                + startingPosition
                + (recordsToSkip > 0 ? "+" + recordsToSkip : "")
                + (stoppingPosition != null ? ", stop=" + stoppingPosition : "")
                + '}';
    }
}
