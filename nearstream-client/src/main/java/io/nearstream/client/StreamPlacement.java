package io.nearstream.client;

import java.util.List;
import java.util.Objects;

/**
 * Which broker stores each streamlet of a stream (docs/protocol.md, "ClusterMetadata (11)").
 *
 * @param version placement version, a {@code u32} held in an int: grows by one with every change of
 *     the stream's placement (0 on a standalone broker)
 * @param owners the id of the broker that stores streamlet {@code i} (ids are {@code u32}s held in
 *     ints); one entry per streamlet
 */
public record StreamPlacement(String name, int version, List<Integer> owners) {

    public StreamPlacement {
        Objects.requireNonNull(name, "name");
        owners = List.copyOf(owners);
    }

    /** The stream's streamlet count. */
    public int streamlets() {
        return owners.size();
    }

    /** The id of the broker that stores {@code streamlet}. */
    public int owner(int streamlet) {
        return owners.get(streamlet);
    }

    /** Whether {@code streamlet} is one of the stream's ({@code 0 … streamlets−1}). */
    public boolean hasStreamlet(int streamlet) {
        return streamlet >= 0 && streamlet < owners.size();
    }

    /** Whether this placement is newer than {@code other} (versions compare unsigned). */
    public boolean isNewerThan(StreamPlacement other) {
        return Integer.compareUnsigned(version, other.version) > 0;
    }
}
