package io.nearstream.flink.source;

import static org.apache.flink.util.Preconditions.checkArgument;
import static org.apache.flink.util.Preconditions.checkNotNull;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.Position;
import io.nearstream.client.StatusCode;
import io.nearstream.client.StreamletMetadata;
import io.nearstream.client.TimestampLookup;
import java.io.Serializable;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.flink.annotation.Internal;
import org.apache.flink.annotation.PublicEvolving;

/**
 * Where the readers of a new job start in each streamlet. A job restored from a checkpoint or
 * savepoint ignores this and resumes at the checkpointed positions.
 *
 * <ul>
 *   <li>{@link #earliest()}: the oldest data each streamlet still holds (the default);
 *   <li>{@link #latest()}: the streamlets' tails when the job starts, i.e. only new data;
 *   <li>{@link #specific(Map)}: given chunk positions per streamlet (as printed by the CLI or
 *       returned by an append), the earliest data for streamlets not in the map;
 *   <li>{@link #timestamp(long)}: the first chunk whose first-record timestamp is at or after the
 *       given time (chunk granularity: Nearstream timestamps chunks, not records).
 * </ul>
 *
 * <p>Streamlets of a stream that appears only after the job started are always read from the
 * earliest data, so nothing written before their discovery is lost.
 */
@PublicEvolving
public final class NearstreamStartingPositions implements Serializable {

    private static final long serialVersionUID = 1L;

    /** How the starting positions are found. */
    private enum Kind {
        EARLIEST,
        LATEST,
        SPECIFIC,
        TIMESTAMP
    }

    private final Kind kind;
    private final Map<Integer, Position> positions;
    private final long timestampMs;

    private NearstreamStartingPositions(Kind kind, Map<Integer, Position> positions, long ts) {
        this.kind = kind;
        this.positions = positions;
        this.timestampMs = ts;
    }

    /** The oldest data each streamlet still holds. */
    public static NearstreamStartingPositions earliest() {
        return new NearstreamStartingPositions(Kind.EARLIEST, Map.of(), -1);
    }

    /** The tail of each streamlet when the enumerator first sees it: only data appended later. */
    public static NearstreamStartingPositions latest() {
        return new NearstreamStartingPositions(Kind.LATEST, Map.of(), -1);
    }

    /** The given chunk position per streamlet; the earliest data for streamlets not listed. */
    public static NearstreamStartingPositions specific(Map<Integer, Position> positions) {
        checkNotNull(positions, "positions");
        for (Map.Entry<Integer, Position> e : positions.entrySet()) {
            checkArgument(
                    e.getKey() != null && e.getKey() >= 0,
                    "streamlet indexes must be >= 0, got %s",
                    e.getKey());
            checkNotNull(e.getValue(), "position of streamlet %s is null", e.getKey());
        }
        return new NearstreamStartingPositions(
                Kind.SPECIFIC, Collections.unmodifiableMap(new TreeMap<>(positions)), -1);
    }

    /**
     * The first chunk whose first-record timestamp (ms since the epoch) is at or after {@code ms}.
     */
    public static NearstreamStartingPositions timestamp(long timestampMs) {
        checkArgument(timestampMs >= 0, "timestamp must be >= 0 ms, got %s", timestampMs);
        return new NearstreamStartingPositions(Kind.TIMESTAMP, Map.of(), timestampMs);
    }

    /**
     * Resolves the starting chunk of each given streamlet; may call the broker (timestamps), so it
     * runs on the enumerator's worker thread only.
     */
    @Internal
    public Map<Integer, Position> resolve(
            NearstreamClient client,
            String stream,
            Collection<StreamletMetadata> streamlets,
            long timeoutMs)
            throws Exception {
        Map<Integer, Position> resolved = new LinkedHashMap<>();
        switch (kind) {
            case EARLIEST:
                streamlets.forEach(s -> resolved.put(s.streamlet(), Position.EARLIEST));
                return resolved;
            case LATEST:
                streamlets.forEach(s -> resolved.put(s.streamlet(), s.tail()));
                return resolved;
            case SPECIFIC:
                Map<Integer, Position> given = positions;
                streamlets.forEach(
                        s ->
                                resolved.put(
                                        s.streamlet(),
                                        given.getOrDefault(s.streamlet(), Position.EARLIEST)));
                return resolved;
            case TIMESTAMP:
                Map<Integer, Long> asked = new HashMap<>();
                streamlets.forEach(s -> asked.put(s.streamlet(), timestampMs));
                if (asked.isEmpty()) {
                    return resolved;
                }
                for (TimestampLookup lookup :
                        client.lookupTimestamps(stream, asked)
                                .get(timeoutMs, TimeUnit.MILLISECONDS)) {
                    if (lookup.status() != StatusCode.OK) {
                        throw BrokerErrors.failure(
                                "Looking up timestamp "
                                        + timestampMs
                                        + " in streamlet "
                                        + lookup.streamlet()
                                        + " of stream '"
                                        + stream
                                        + "'",
                                lookup.status(),
                                lookup.message());
                    }
                    resolved.put(lookup.streamlet(), lookup.position());
                }
                return resolved;
            default:
                throw new IllegalStateException("unknown kind " + kind);
        }
    }

    @Override
    public String toString() {
        switch (kind) {
            case SPECIFIC:
                return "specific" + positions;
            case TIMESTAMP:
                return "timestamp(" + timestampMs + ")";
            default:
                return kind.name().toLowerCase();
        }
    }
}
