package io.nearstream.client;

import java.util.List;

/**
 * The copies of one streamlet (docs/protocol.md, "ClusterMetadata (11)", ReplicaSet). Broker ids
 * are {@code u32}s held in ints, as elsewhere.
 *
 * @param leaderEpoch grows by one with every change of the streamlet's leader, a {@code u64} held
 *     in a long; 0 for a stream without replication and on a standalone broker
 * @param replicas the brokers that hold a copy, the preferred leader first (1–255 on the wire; the
 *     stream's replication, 1–3)
 * @param isr the in-sync replicas, those that hold every acknowledged chunk: the leader and the
 *     followers it replicates to (1–255 on the wire)
 */
public record ReplicaSet(long leaderEpoch, List<Integer> replicas, List<Integer> isr) {

    /** The most elements a {@code u8} count can carry. */
    static final int MAX_COUNT = 0xFF;

    public ReplicaSet {
        replicas = List.copyOf(replicas);
        isr = List.copyOf(isr);
    }

    /**
     * The replica set of a streamlet with one copy, stored by {@code broker}: epoch 0, replicas and
     * isr both {@code [broker]} (what a standalone broker, or a stream of replication 1, answers).
     */
    public static ReplicaSet single(int broker) {
        return new ReplicaSet(0, List.of(broker), List.of(broker));
    }

    /** The number of copies ({@code r}). */
    public int replication() {
        return replicas.size();
    }

    /** Whether {@code broker} holds a copy. */
    public boolean isReplica(int broker) {
        return replicas.contains(broker);
    }

    /** Whether {@code broker} is in sync (the leader always is). */
    public boolean isInSync(int broker) {
        return isr.contains(broker);
    }
}
