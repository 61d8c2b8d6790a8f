package io.nearstream.client;

import java.util.Objects;

/**
 * How the broker lays out and serves a push subscription (docs/protocol.md, "PushSubscribe"): each
 * ring's slot count and slot size, how long a ring's consumer may go without a heartbeat before the
 * ring is reclaimed, the records the push thread writes ({@code filter}: docs/protocol.md, "Record
 * filters"), the slots' layout ({@code slotFormat}: docs/shm-layout.md, "View slots"), and whether
 * an in-sync follower may serve it from its own copy ({@code replicaRead}: frame flag {@code 0x04},
 * docs/cluster.md "Follower reads"). Immutable; the {@code with} methods return a copy with one
 * field changed.
 */
public record PushSubscribeOptions(
        int slotsPerRing,
        int slotBytes,
        int consumerTimeoutMs,
        RecordFilter filter,
        SlotFormat slotFormat,
        boolean replicaRead) {

    public PushSubscribeOptions {
        Objects.requireNonNull(filter, "filter");
        Objects.requireNonNull(slotFormat, "slotFormat");
    }

    /** Every record, binary slots, served by the streamlets' leader. */
    public static PushSubscribeOptions of(int slotsPerRing, int slotBytes, int consumerTimeoutMs) {
        return new PushSubscribeOptions(
                slotsPerRing,
                slotBytes,
                consumerTimeoutMs,
                RecordFilter.none(),
                SlotFormat.BINARY,
                false);
    }

    public PushSubscribeOptions withFilter(RecordFilter filter) {
        return new PushSubscribeOptions(
                slotsPerRing, slotBytes, consumerTimeoutMs, filter, slotFormat, replicaRead);
    }

    public PushSubscribeOptions withSlotFormat(SlotFormat slotFormat) {
        return new PushSubscribeOptions(
                slotsPerRing, slotBytes, consumerTimeoutMs, filter, slotFormat, replicaRead);
    }

    public PushSubscribeOptions withReplicaRead(boolean replicaRead) {
        return new PushSubscribeOptions(
                slotsPerRing, slotBytes, consumerTimeoutMs, filter, slotFormat, replicaRead);
    }
}
