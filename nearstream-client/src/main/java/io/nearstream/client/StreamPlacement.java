package io.nearstream.client;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Which broker stores each streamlet of a stream (docs/protocol.md, "ClusterMetadata (11)").
 *
 * @param version placement version, a {@code u32} held in an int: grows by one with every change of
 *     the stream's placement (0 on a standalone broker)
 * @param owners the id of the broker that stores streamlet {@code i} (ids are {@code u32}s held in
 *     ints); one entry per streamlet. With replication, the streamlet's leader.
 * @param replicaSets streamlet {@code i}'s copies; one entry per streamlet
 */
public record StreamPlacement(
        String name, int version, List<Integer> owners, List<ReplicaSet> replicaSets) {

    public StreamPlacement {
        Objects.requireNonNull(name, "name");
        owners = List.copyOf(owners);
        replicaSets = List.copyOf(replicaSets);
        if (replicaSets.size() != owners.size()) {
            throw new IllegalArgumentException(
                    "stream '"
                            + name
                            + "' has "
                            + owners.size()
                            + " owners but "
                            + replicaSets.size()
                            + " replica sets");
        }
    }

    /**
     * A placement without replication: each streamlet has one copy, on its owner, at leader epoch 0
     * ({@link ReplicaSet#single}), as a standalone broker answers.
     */
    public StreamPlacement(String name, int version, List<Integer> owners) {
        this(name, version, owners, singleCopies(owners));
    }

    private static List<ReplicaSet> singleCopies(List<Integer> owners) {
        List<ReplicaSet> sets = new ArrayList<>(owners.size());
        for (int owner : owners) {
            sets.add(ReplicaSet.single(owner));
        }
        return sets;
    }

    /** The stream's streamlet count. */
    public int streamlets() {
        return owners.size();
    }

    /** The id of the broker that stores {@code streamlet} (its leader, with replication). */
    public int owner(int streamlet) {
        return owners.get(streamlet);
    }

    /** The copies of {@code streamlet}. */
    public ReplicaSet replicaSet(int streamlet) {
        return replicaSets.get(streamlet);
    }

    /**
     * Whether the stream keeps more than one copy of its streamlets. Its transactions are then per
     * streamlet (docs/protocol.md, "Transaction scopes"), so that everything a transaction holds
     * fails over with the streamlet's replicas.
     */
    public boolean replicated() {
        for (ReplicaSet set : replicaSets) {
            if (set.replication() > 1) {
                return true;
            }
        }
        return false;
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
