package io.nearstream.flink.source;

import static org.apache.flink.util.Preconditions.checkArgument;
import static org.apache.flink.util.Preconditions.checkNotNull;

import io.nearstream.client.Position;
import io.nearstream.client.StreamletMetadata;
import java.io.Serializable;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.annotation.Internal;
import org.apache.flink.annotation.PublicEvolving;

/**
 * Where a bounded source stops reading each streamlet (exclusive: the chunk at the stopping
 * position is not read).
 *
 * <ul>
 *   <li>{@link #latest()}: the streamlets' tails when the job starts, i.e. what the stream holds at
 *       that moment;
 *   <li>{@link #specific(Map)}: given chunk positions per streamlet; streamlets not in the map stop
 *       at their tail at start, as with {@link #latest()}.
 * </ul>
 *
 * <p>With several active groups per streamlet ({@code Q > 1}), an older active group can still
 * receive chunks positioned before a tail taken earlier; those chunks are read as well.
 */
@PublicEvolving
public final class NearstreamStoppingPositions implements Serializable {

    private static final long serialVersionUID = 1L;

    private final Map<Integer, Position> positions;

    private NearstreamStoppingPositions(Map<Integer, Position> positions) {
        this.positions = positions;
    }

    /** Stop at each streamlet's tail as seen when the enumerator starts. */
    public static NearstreamStoppingPositions latest() {
        return new NearstreamStoppingPositions(Map.of());
    }

    /** Stop at the given chunk position per streamlet; at the tail for streamlets not listed. */
    public static NearstreamStoppingPositions specific(Map<Integer, Position> positions) {
        checkNotNull(positions, "positions");
        for (Map.Entry<Integer, Position> e : positions.entrySet()) {
            checkArgument(
                    e.getKey() != null && e.getKey() >= 0,
                    "streamlet indexes must be >= 0, got %s",
                    e.getKey());
            checkNotNull(e.getValue(), "position of streamlet %s is null", e.getKey());
        }
        return new NearstreamStoppingPositions(
                Collections.unmodifiableMap(new TreeMap<>(positions)));
    }

    /** The stopping chunk of each given streamlet, from metadata taken by the enumerator. */
    @Internal
    public Map<Integer, Position> resolve(Collection<StreamletMetadata> streamlets) {
        Map<Integer, Position> given = positions;
        Map<Integer, Position> resolved = new LinkedHashMap<>();
        streamlets.forEach(
                s -> resolved.put(s.streamlet(), given.getOrDefault(s.streamlet(), s.tail())));
        return resolved;
    }

    @Override
    public String toString() {
        return positions.isEmpty() ? "latest" : "specific" + positions;
    }
}
