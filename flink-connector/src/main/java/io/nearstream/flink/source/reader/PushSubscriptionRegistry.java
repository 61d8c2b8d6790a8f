package io.nearstream.flink.source.reader;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.PushRingSpec;
import io.nearstream.client.PushSplitStart;
import io.nearstream.client.PushSubscription;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;
import org.apache.flink.annotation.VisibleForTesting;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The JVM-local election of push mode (docs/flink-connector.md, "Push mode"): the push split
 * readers of one source (same broker, stream and per-source id) in this JVM form a group; the
 * member with the lowest subtask index is the leader and holds the group's one push subscription,
 * carrying one ring per member (ring {@code i} ↔ the member with the {@code i}-th lowest subtask
 * index) with its splits and their current positions. Every member learns its ring through {@link
 * Member#attachment()}.
 *
 * <p>Changes are applied at once, on the calling thread, under the group's lock: splits of a member
 * changed → PushUpdate (same rings); a member joined or left, or the leader changed → PushSubscribe
 * a new subscription from the members' current positions (through the new leader's connection),
 * publish it, then PushClose the old one (best effort; it also ends when its leader's connection
 * closes). A failed RPC fails every member ({@link Member#failure()}), which turns into an {@link
 * IOException} of their next fetch, so Flink restores from its checkpoint.
 */
@Internal
public final class PushSubscriptionRegistry {

    private static final Logger LOG = LoggerFactory.getLogger(PushSubscriptionRegistry.class);

    /** The registry of this JVM (a TaskManager's readers share it across tasks). */
    public static final PushSubscriptionRegistry INSTANCE = new PushSubscriptionRegistry();

    /** Identifies one source of one job towards one broker. */
    public record Key(String broker, String stream, String sourceId) {}

    /** Ring geometry and consumer timeout of a subscription. */
    public record Geometry(
            int slotsPerRing, int slotBytes, int consumerTimeoutMs, long rpcTimeoutMs) {}

    /**
     * Where a member reads: ring {@code ringIndex} of the region of subscription {@code
     * generation}.
     */
    public record Attachment(
            long generation,
            long subscriptionId,
            long brokerEpoch,
            String regionPath,
            int ringIndex) {}

    private final Map<Key, Group> groups = new HashMap<>();
    private long generations;

    @VisibleForTesting
    PushSubscriptionRegistry() {}

    /**
     * Joins the group of {@code key} with the given splits (read through {@code positions}, which
     * may be called from other members' threads) and subscribes or re-subscribes the group.
     *
     * @param client the member's own connection; the leader's carries the subscription
     */
    public Member join(
            Key key,
            int subtaskIndex,
            NearstreamClient client,
            Geometry geometry,
            Supplier<List<PushSplitStart>> positions) {
        Group group;
        synchronized (groups) {
            group = groups.computeIfAbsent(key, k -> new Group(k, geometry));
        }
        Member member = new Member(group, subtaskIndex, client, positions);
        synchronized (group) {
            Member stale = group.members.put(subtaskIndex, member);
            if (stale != null) {
                // A new attempt of the subtask while the old one has not left (a TaskManager
                // lost inside this JVM): the old reader is dead, its ring goes to the new one.
                LOG.warn("Push group {}: subtask {} joined again, replacing it", key, subtaskIndex);
            }
            group.reconcile(false);
        }
        return member;
    }

    @VisibleForTesting
    int groupCount() {
        synchronized (groups) {
            return groups.size();
        }
    }

    private synchronized long nextGeneration() {
        return ++generations;
    }

    /** A reader's handle on its group. */
    public static final class Member {
        private final Group group;
        private final int subtaskIndex;
        private final NearstreamClient client;
        private final Supplier<List<PushSplitStart>> positions;
        @Nullable private volatile Attachment attachment;
        @Nullable private volatile Exception failure;

        Member(
                Group group,
                int subtaskIndex,
                NearstreamClient client,
                Supplier<List<PushSplitStart>> positions) {
            this.group = group;
            this.subtaskIndex = subtaskIndex;
            this.client = client;
            this.positions = positions;
        }

        public int subtaskIndex() {
            return subtaskIndex;
        }

        /** The ring to read, or null before the first subscription. */
        @Nullable
        public Attachment attachment() {
            return attachment;
        }

        /** Why the group's last RPC failed, or null. */
        @Nullable
        public Exception failure() {
            return failure;
        }

        public boolean isLeader() {
            synchronized (group) {
                return !group.members.isEmpty() && group.members.firstKey() == subtaskIndex;
            }
        }

        /** The member's splits changed: the leader updates the subscription. */
        public void splitsChanged() {
            synchronized (group) {
                if (group.members.get(subtaskIndex) == this) {
                    group.reconcile(true);
                }
            }
        }

        /**
         * Leaves the group (call before closing the member's connection): the others re-elect and
         * re-subscribe from their current positions; the last one closes the subscription.
         */
        public void leave() {
            synchronized (group) {
                if (group.members.remove(subtaskIndex, this)) {
                    group.reconcile(false);
                }
            }
        }
    }

    /** The members of one key; every field is guarded by the group's monitor. */
    private final class Group {
        final Key key;
        final Geometry geometry;
        final TreeMap<Integer, Member> members = new TreeMap<>();
        @Nullable Member leader;
        @Nullable PushSubscription subscription;
        List<Integer> ringOwners = List.of();

        Group(Key key, Geometry geometry) {
            this.key = key;
            this.geometry = geometry;
        }

        void reconcile(boolean splitsChanged) {
            if (members.isEmpty()) {
                closeSubscription();
                synchronized (groups) {
                    groups.remove(key, this);
                }
                return;
            }
            Member newLeader = members.firstEntry().getValue();
            List<Integer> owners = new ArrayList<>(members.keySet());
            List<PushRingSpec> rings = new ArrayList<>(owners.size());
            for (Member m : members.values()) {
                rings.add(new PushRingSpec(m.subtaskIndex, m.positions.get()));
            }
            try {
                if (subscription != null && newLeader == leader && owners.equals(ringOwners)) {
                    if (splitsChanged) {
                        LOG.info("Push group {}: updating subscription {}", key, subscription);
                        leader.client
                                .pushUpdate(subscription.subscriptionId(), rings)
                                .get(geometry.rpcTimeoutMs(), TimeUnit.MILLISECONDS);
                    }
                    return;
                }
                PushSubscription created =
                        newLeader
                                .client
                                .pushSubscribe(
                                        key.stream(),
                                        geometry.slotsPerRing(),
                                        geometry.slotBytes(),
                                        geometry.consumerTimeoutMs(),
                                        rings)
                                .get(geometry.rpcTimeoutMs(), TimeUnit.MILLISECONDS);
                LOG.info(
                        "Push group {}: subtask {} subscribed {} for rings of subtasks {}",
                        key,
                        newLeader.subtaskIndex,
                        created,
                        owners);
                PushSubscription previous = subscription;
                Member previousLeader = leader;
                subscription = created;
                leader = newLeader;
                ringOwners = owners;
                long generation = nextGeneration();
                int ring = 0;
                for (Member m : members.values()) {
                    m.failure = null;
                    m.attachment =
                            new Attachment(
                                    generation,
                                    created.subscriptionId(),
                                    created.brokerEpoch(),
                                    created.regionPath(),
                                    ring++);
                }
                // Only now: a member that still reads the old region sees its new ring first.
                close(previous, previousLeader);
            } catch (Exception e) {
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
                IOException failure =
                        new IOException("Push subscription of group " + key + " failed: " + e, e);
                LOG.warn("{}", failure.getMessage());
                for (Member m : members.values()) {
                    m.failure = failure;
                }
            }
        }

        private void closeSubscription() {
            PushSubscription previous = subscription;
            Member previousLeader = leader;
            subscription = null;
            leader = null;
            ringOwners = List.of();
            close(previous, previousLeader);
        }

        /** Best effort: the subscription also ends when its leader's connection closes. */
        private void close(@Nullable PushSubscription previous, @Nullable Member via) {
            if (previous == null) {
                return;
            }
            long id = previous.subscriptionId();
            try {
                via.client.pushClose(id).get(geometry.rpcTimeoutMs(), TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
                LOG.debug(
                        "PushClose of subscription {} failed (its connection may be gone)", id, e);
            }
        }
    }
}
