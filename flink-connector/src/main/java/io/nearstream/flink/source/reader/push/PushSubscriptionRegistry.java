package io.nearstream.flink.source.reader.push;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.PushRingSpec;
import io.nearstream.client.PushSplitStart;
import io.nearstream.client.PushSubscribeOptions;
import io.nearstream.client.PushSubscription;
import io.nearstream.client.RecordFilter;
import io.nearstream.client.SlotFormat;
import io.nearstream.jni.ShmLayout;
import io.nearstream.jni.ShmRegion;
import io.nearstream.jni.SlotRing;
import java.io.IOException;
import java.io.Serializable;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;
import org.apache.flink.annotation.VisibleForTesting;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The push groups of this JVM (docs/flink-connector.md, "Push mode"): the push split readers of one
 * source (same broker, stream and per-source id) on one host form a group, held by the TaskManager
 * JVM of the host's lowest subtask holding splits of that broker (the enumerator tells every reader
 * which JVM that is; a reader pushing from several brokers of its host is in one group each).
 * Readers of that JVM join directly ({@link #join}); readers of the host's other JVMs join through
 * the enumerator ({@link #relayed}). The lowest member of this JVM holds the group's one push
 * subscription, carrying one ring per member (ring {@code i} ↔ the member with the {@code i}-th
 * lowest subtask index) with its splits and their current positions. Every member learns its ring
 * through {@link Member#attachment()}, a relayed one through its {@link RingRelay}.
 *
 * <p>The first subscription of a group waits for its peers: the enumerator tells every reader which
 * subtasks of its host hold splits ({@link #peersKnown}), and the group subscribes once all of them
 * have joined - one PushSubscribe per host, broker and job start. Without that word (a registry
 * used on its own) the first member subscribes at once, unless a reader announced restored splits
 * ({@link #awaitPeers}); a group still waiting {@link #PEER_WAIT_MS} ms after its first join
 * subscribes with the members it has.
 *
 * <p>After that, changes are applied at once, on the calling thread, under the group's lock: splits
 * of a member changed, or a member left → PushUpdate on the same rings (a left member's ring gets
 * no splits; if it was the leader, the group keeps its connection, which carries the subscription,
 * open until the subscription ends); a member without a ring joined → PushSubscribe a new
 * subscription with one ring per member from their current positions (through the lowest local
 * member's connection), publish it, then PushClose the old one (best effort; it also ends when its
 * connection closes). A failed RPC fails every member ({@link Member#failure()}), which turns into
 * an {@link IOException} of their next fetch, so Flink restores from its checkpoint.
 *
 * <p>Relayed members wait for a reader of this JVM to join before the group subscribes (at a job
 * start they often ask first, and one subscription must carry every ring), but only while a reader
 * of this JVM may still join: every reader of the key tells when it opens ({@link #readerOpened})
 * and when it has nothing left to read or closed ({@link #readerDone}). Once none may join (a
 * bounded job restored from a checkpoint whose readers here emitted their last records before the
 * other JVM's readers asked), the group subscribes for the relayed members through a connection of
 * its own, which it closes with the subscription.
 */
@Internal
public final class PushSubscriptionRegistry {

    private static final Logger LOG = LoggerFactory.getLogger(PushSubscriptionRegistry.class);

    /** The registry of this JVM (a TaskManager's readers share it across tasks). */
    public static final PushSubscriptionRegistry INSTANCE = new PushSubscriptionRegistry();

    /** Identifies one source of one job towards one broker. */
    public record Key(String broker, String stream, String sourceId) {}

    /**
     * Ring geometry, consumer timeout, record filter and slot format of a subscription (one
     * source's readers share one subscription, so they share these), and whether it is a replica
     * read: over a cluster the group's broker may push streamlets it follows in sync rather than
     * leads (docs/cluster.md, "Follower reads"); a leader ignores the flag.
     */
    public record Geometry(
            int slotsPerRing,
            int slotBytes,
            int consumerTimeoutMs,
            long rpcTimeoutMs,
            RecordFilter filter,
            SlotFormat slotFormat,
            boolean replicaRead) {
        /** What the group's PushSubscribe asks of the broker. */
        public PushSubscribeOptions subscribeOptions() {
            return new PushSubscribeOptions(
                    slotsPerRing, slotBytes, consumerTimeoutMs, filter, slotFormat, replicaRead);
        }

        /** Without a record filter, binary slots, served by the streamlets' leader. */
        public Geometry(int slotsPerRing, int slotBytes, int consumerTimeoutMs, long rpcTimeoutMs) {
            this(
                    slotsPerRing,
                    slotBytes,
                    consumerTimeoutMs,
                    rpcTimeoutMs,
                    RecordFilter.none(),
                    SlotFormat.BINARY,
                    false);
        }
    }

    /**
     * Where a member reads: ring {@code ringIndex} of the region of subscription {@code
     * generation}.
     */
    public record Attachment(
            long generation,
            long subscriptionId,
            long brokerEpoch,
            String regionPath,
            int ringIndex)
            implements Serializable {}

    /**
     * How the group answers a member relayed from another JVM of the host (through the enumerator):
     * the ring it reads now, or why the group's last push RPC failed.
     */
    public interface RingRelay {
        void assigned(int subtaskIndex, Attachment attachment);

        void failed(int subtaskIndex, String failure);
    }

    /**
     * How long a group waits for the peers the enumerator announced before it subscribes with the
     * members it has (a peer whose fetcher never starts, an enumerator that never answers).
     */
    static final long PEER_WAIT_MS = 10_000;

    /** How often a group of relayed members only checks that one of them still reads. */
    static final long WATCH_MS = 200;

    /**
     * The generation of a ring as its subscription created it: regions start zeroed and each
     * activation adds one (docs/shm-layout.md, ring header); a reclaim re-activates.
     */
    static final int FIRST_RING_GENERATION = 1;

    /**
     * Classes a group's end may use for the first time in this copy of the connector. A group whose
     * relayed members outlive this JVM's readers (a cancelled job) ends on its scheduler after the
     * TaskManager closed the job's user class loader, which then loads no class any more. The
     * group's close() closes the leader's connection whatever PushClose throws, but a class that
     * cannot be loaded still costs the PushClose; each group's constructor loads them while the
     * loader is open.
     */
    @VisibleForTesting
    static final List<String> END_PATH_CLASSES =
            List.of(
                    // NettyNearstreamClient#pushClose: only a re-subscribe or a group's end send
                    // a PushClose (package-private in the client, hence by name).
                    "io.nearstream.client.ProtocolCodec$PushCloseRequest",
                    // NettyNearstreamClient#close fails the pending requests with it.
                    "io.nearstream.client.NearstreamClientException");

    private final Map<Key, Group> groups = new HashMap<>();

    /** Guarded by {@link #groups}: per key, the open readers of this JVM that may still join. */
    private final Map<Key, Set<Object>> readersThatMayJoin = new HashMap<>();

    private final String scopeId = UUID.randomUUID().toString();
    private final long peerWaitNanos;
    private long generations;

    /** A registry of its own (tests; production readers share {@link #INSTANCE}). */
    @VisibleForTesting
    public PushSubscriptionRegistry() {
        this(PEER_WAIT_MS);
    }

    @VisibleForTesting
    PushSubscriptionRegistry(long peerWaitMs) {
        this.peerWaitNanos = TimeUnit.MILLISECONDS.toNanos(peerWaitMs);
    }

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
        Group group = group(key);
        Member member = new Member(group, subtaskIndex, client, positions);
        synchronized (group) {
            if (group.geometry == null) {
                group.geometry = geometry;
            }
            if (group.waitingSinceNanos == 0) {
                group.waitingSinceNanos = System.nanoTime();
            }
            group.hadLocalMember = true;
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

    /**
     * Identifies this registry's election scope: readers that report the same id to the enumerator
     * share push groups.
     */
    public String scopeId() {
        return scopeId;
    }

    /**
     * A reader of {@code key} restored splits: its group must not subscribe before it learns its
     * peers ({@link #peersKnown}) or {@link #PEER_WAIT_MS} passes.
     */
    public void awaitPeers(Key key) {
        Group group = group(key);
        synchronized (group) {
            if (group.subscription == null && group.expectedPeers == null) {
                group.awaitingPeers = true;
            }
        }
    }

    /**
     * The enumerator's word on which subtasks of this scope hold splits of {@code key}'s source:
     * the group's first subscription waits until all of them have joined.
     */
    public void peersKnown(Key key, List<Integer> subtasks) {
        Group group = group(key);
        synchronized (group) {
            group.expectedPeers = List.copyOf(subtasks);
            group.awaitingPeers = false;
            if (group.subscription == null && !group.members.isEmpty()) {
                group.reconcile(false);
            }
        }
    }

    /**
     * A reader of another TaskManager JVM on this host asks for its ring, tells that its splits
     * changed, or that it left ({@link io.nearstream.flink.source.event.PushRingRequestEvent},
     * relayed by the enumerator). The group treats it as a member whose positions are the ones it
     * sent (a re-subscribe may push it chunks it has read since: it skips them, as after a restore)
     * and answers through {@code relay}. Runs the push RPC, if any, on the calling thread.
     *
     * @param connect opens a connection to the broker, for a group that must subscribe while no
     *     reader of this JVM is a member (see the class comment)
     */
    public void relayed(
            Key key,
            int subtaskIndex,
            List<PushSplitStart> splits,
            boolean left,
            Geometry geometry,
            RingRelay relay,
            Supplier<NearstreamClient> connect) {
        Group group = group(key);
        synchronized (group) {
            group.connect = connect;
            Member known = group.members.get(subtaskIndex);
            if (left) {
                if (known != null && known.relay != null) {
                    known.leave();
                }
                return;
            }
            if (known != null && known.relay != null) {
                known.relayedSplits = List.copyOf(splits);
                known.relay = relay;
                if (group.ringMembers.contains(known) && known.attachment != null) {
                    // Already reads a ring: answer again (the request may be a new attempt's).
                    relay.assigned(subtaskIndex, known.attachment);
                }
                group.reconcile(true);
                return;
            }
            if (group.geometry == null) {
                group.geometry = geometry;
            }
            if (group.waitingSinceNanos == 0) {
                group.waitingSinceNanos = System.nanoTime();
            }
            Member member = new Member(group, subtaskIndex, null, null);
            member.relay = relay;
            member.relayedSplits = List.copyOf(splits);
            if (known != null) {
                LOG.warn("Push group {}: subtask {} joined from another JVM", key, subtaskIndex);
            }
            group.members.put(subtaskIndex, member);
            group.reconcile(false);
        }
    }

    /**
     * A reader of {@code key} opened in this JVM: relayed members may wait for it to join. Returns
     * the reader's token for {@link #readerDone} (one per reader object: a new attempt of a subtask
     * and its old attempt closing late are two readers).
     */
    public Object readerOpened(Key key) {
        Object reader = new Object();
        synchronized (groups) {
            readersThatMayJoin.computeIfAbsent(key, k -> new HashSet<>()).add(reader);
        }
        return reader;
    }

    /**
     * A reader of {@code key} in this JVM will not join (again): it read all its splits and was
     * told no more will come, or it closed. When it was the last one that could, relayed members
     * waiting for one get their rings now.
     */
    public void readerDone(Key key, Object reader) {
        Group group;
        synchronized (groups) {
            Set<Object> open = readersThatMayJoin.get(key);
            if (open == null || !open.remove(reader) || !open.isEmpty()) {
                return;
            }
            readersThatMayJoin.remove(key);
            group = groups.get(key);
        }
        if (group != null) {
            synchronized (group) {
                if (!group.hadLocalMember && !group.members.isEmpty()) {
                    group.reconcile(false);
                }
            }
        }
    }

    private boolean aReaderMayJoin(Key key) {
        synchronized (groups) {
            return readersThatMayJoin.containsKey(key);
        }
    }

    private Group group(Key key) {
        synchronized (groups) {
            return groups.computeIfAbsent(key, Group::new);
        }
    }

    @VisibleForTesting
    int groupCount() {
        synchronized (groups) {
            return groups.size();
        }
    }

    /**
     * Loads (and initializes) {@link #END_PATH_CLASSES} through this class's loader; returns those
     * that failed (logged; the group works without them, it only risks its end later).
     */
    @VisibleForTesting
    static List<String> preloadEndPathClasses() {
        List<String> failed = new ArrayList<>();
        ClassLoader loader = PushSubscriptionRegistry.class.getClassLoader();
        for (String name : END_PATH_CLASSES) {
            try {
                Class.forName(name, true, loader);
            } catch (ClassNotFoundException | LinkageError e) {
                LOG.warn("Cannot preload {}, which ending a push group may need", name, e);
                failed.add(name);
            }
        }
        return failed;
    }

    private synchronized long nextGeneration() {
        return ++generations;
    }

    /**
     * A reader's handle on its group: a reader of this JVM (with its own connection), or one of
     * another JVM on the host, relayed through the enumerator ({@link #relay} set, no connection;
     * its positions are the ones it sent last).
     */
    public static final class Member implements PushMembership {
        private final Group group;
        private final int subtaskIndex;
        @Nullable private final NearstreamClient client;
        @Nullable private final Supplier<List<PushSplitStart>> positions;
        @Nullable private volatile Attachment attachment;
        @Nullable private volatile Exception failure;

        /** Guarded by the group: how a relayed member is answered, null for a local one. */
        @Nullable private RingRelay relay;

        /** Guarded by the group: a relayed member's splits as it sent them last. */
        private List<PushSplitStart> relayedSplits = List.of();

        Member(
                Group group,
                int subtaskIndex,
                @Nullable NearstreamClient client,
                @Nullable Supplier<List<PushSplitStart>> positions) {
            this.group = group;
            this.subtaskIndex = subtaskIndex;
            this.client = client;
            this.positions = positions;
        }

        /** The splits of this member's ring with the positions they continue at. */
        private List<PushSplitStart> splits() {
            return relay != null ? relayedSplits : positions.get();
        }

        public int subtaskIndex() {
            return subtaskIndex;
        }

        /**
         * The ring to read, or null before the first subscription (a group that waited for its
         * peers for too long subscribes from here, on the polling reader's thread).
         */
        @Override
        @Nullable
        public Attachment attachment() {
            Attachment a = attachment;
            if (a == null && failure == null) {
                synchronized (group) {
                    if (group.members.get(subtaskIndex) == this && group.peerWaitExpired()) {
                        group.reconcile(false);
                    }
                }
                a = attachment;
            }
            return a;
        }

        /** Why the group's last RPC failed, or null. */
        @Override
        @Nullable
        public Exception failure() {
            return failure;
        }

        /** Whether this member's connection would carry the group's next subscription. */
        public boolean isLeader() {
            synchronized (group) {
                return group.firstLocalMember() == this;
            }
        }

        /**
         * Runs {@code task} every {@code periodMs} (after {@code initialDelayMs}) on the group's
         * scheduler thread, until the returned future is cancelled or the group ends (its last
         * member left). A task must not block: it shares the thread with the group's others.
         */
        @Override
        public ScheduledFuture<?> schedule(Runnable task, long initialDelayMs, long periodMs) {
            synchronized (group) {
                return group.scheduler()
                        .scheduleWithFixedDelay(
                                task, initialDelayMs, periodMs, TimeUnit.MILLISECONDS);
            }
        }

        /** The member's splits changed: the leader updates the subscription. */
        @Override
        public void splitsChanged() {
            synchronized (group) {
                if (group.members.get(subtaskIndex) == this) {
                    group.reconcile(true);
                }
            }
        }

        /**
         * Leaves the group. While others remain, the subscription stays: this member's ring is
         * emptied by a PushUpdate; if this member's connection carries the subscription, the group
         * takes that connection over and closes it when the subscription ends. The last member
         * closes the subscription.
         *
         * @return whether the caller must close its connection itself (false: the group took it)
         */
        @Override
        public boolean leave() {
            synchronized (group) {
                if (!group.members.remove(subtaskIndex, this)) {
                    return true;
                }
                int ring = group.ringMembers.indexOf(this);
                if (ring >= 0) {
                    group.ringMembers.set(ring, null);
                }
                group.reconcile(true);
                if (group.leader == this && group.subscription != null) {
                    return false;
                }
                return true;
            }
        }
    }

    /** The members of one key; every field is guarded by the group's monitor. */
    private final class Group {
        final Key key;
        final TreeMap<Integer, Member> members = new TreeMap<>();

        /** Set by the first member to join. */
        @Nullable Geometry geometry;

        /** The member whose connection carries the subscription (it may have left since). */
        @Nullable Member leader;

        @Nullable PushSubscription subscription;

        /** The member reading each ring of the subscription; null once it left. */
        final List<Member> ringMembers = new ArrayList<>();

        /** The subtask index each ring was created for (kept after its member left). */
        List<Integer> ringSubtasks = List.of();

        /** The subtasks the first subscription waits for, once the enumerator told them. */
        @Nullable List<Integer> expectedPeers;

        /** A member restored splits: wait for {@link #expectedPeers} even before they are told. */
        boolean awaitingPeers;

        /** When the first member joined (System.nanoTime()), 0 before. */
        long waitingSinceNanos;

        /** The members' periodic work (ring heartbeats, tail refreshes); ends with the group. */
        @Nullable ScheduledExecutorService scheduler;

        /** Whether a reader of this JVM joined: before that, relayed members wait for one. */
        boolean hadLocalMember;

        /** Watches relayed members' rings once every local member left ({@link #watch}). */
        @Nullable ScheduledFuture<?> relayedWatch;

        /** The subscription's region, mapped by {@link #relayedWatch}. */
        @Nullable ShmRegion watchedRegion;

        /** Opens the group's own connection when no reader of this JVM is a member. */
        @Nullable Supplier<NearstreamClient> connect;

        Group(Key key) {
            this.key = key;
            preloadEndPathClasses();
        }

        /** Whether the first subscription must still wait for peers that have not joined. */
        boolean waitingForPeers() {
            if (subscription != null || peerWaitExpired()) {
                return false;
            }
            if (expectedPeers != null) {
                return !members.keySet().containsAll(expectedPeers);
            }
            return awaitingPeers;
        }

        boolean peerWaitExpired() {
            return waitingSinceNanos != 0 && System.nanoTime() - waitingSinceNanos > peerWaitNanos;
        }

        /** The lowest member of this JVM: its connection carries a new subscription. */
        @Nullable
        Member firstLocalMember() {
            for (Member m : members.values()) {
                if (m.relay == null) {
                    return m;
                }
            }
            return null;
        }

        /** Whether every member reads a ring of the current subscription. */
        private boolean everyMemberHasARing() {
            for (Member m : members.values()) {
                if (!ringMembers.contains(m)) {
                    return false;
                }
            }
            return true;
        }

        /** The subscription's rings: each member's splits and positions; none for a left one. */
        private List<PushRingSpec> ringSpecs() {
            List<PushRingSpec> rings = new ArrayList<>(ringMembers.size());
            for (int i = 0; i < ringMembers.size(); i++) {
                Member m = ringMembers.get(i);
                rings.add(
                        m == null
                                ? new PushRingSpec(ringSubtasks.get(i), List.of())
                                : new PushRingSpec(m.subtaskIndex, m.splits()));
            }
            return rings;
        }

        ScheduledExecutorService scheduler() {
            if (scheduler == null) {
                scheduler =
                        Executors.newSingleThreadScheduledExecutor(
                                r -> {
                                    Thread t = new Thread(r, "nearstream-push-" + key.stream());
                                    t.setDaemon(true);
                                    return t;
                                });
            }
            return scheduler;
        }

        void reconcile(boolean splitsChanged) {
            if (members.isEmpty()) {
                // Each step runs even if an earlier one threw (an Error included): closing the
                // leader's connection (in closeSubscription) is what makes the broker unlink the
                // region, and the scheduler's thread must not outlive the group.
                try {
                    closeSubscription();
                } finally {
                    try {
                        if (watchedRegion != null) {
                            ShmRegion mapped = watchedRegion;
                            watchedRegion = null;
                            mapped.close();
                        }
                    } finally {
                        synchronized (groups) {
                            groups.remove(key, this);
                        }
                        if (scheduler != null) {
                            scheduler.shutdownNow(); // last: this may run on it (the relayed watch)
                            scheduler = null;
                        }
                    }
                }
                return;
            }
            if (!hadLocalMember && aReaderMayJoin(key)) {
                LOG.info(
                        "Push group {}: relayed members {} wait for this JVM's readers",
                        key,
                        members.keySet());
                return;
            }
            if (waitingForPeers()) {
                LOG.info(
                        "Push group {}: members {} wait for peers {} before subscribing",
                        key,
                        members.keySet(),
                        expectedPeers == null ? "(not told yet)" : expectedPeers);
                return;
            }
            try {
                if (subscription != null && everyMemberHasARing()) {
                    if (splitsChanged) {
                        LOG.info("Push group {}: updating subscription {}", key, subscription);
                        leader.client
                                .pushUpdate(subscription.subscriptionId(), ringSpecs())
                                .get(geometry.rpcTimeoutMs(), TimeUnit.MILLISECONDS);
                    }
                    if (firstLocalMember() == null) {
                        watch();
                    }
                    return;
                }
                subscribe();
                if (firstLocalMember() == null) {
                    watch();
                }
            } catch (Throwable e) {
                // Throwable: an Error (a class of the RPC path first loaded after the job's class
                // loader closed) must not skip the watch below either.
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
                IOException failure =
                        new IOException("Push subscription of group " + key + " failed: " + e, e);
                LOG.warn("{}", failure.getMessage());
                for (Member m : members.values()) {
                    m.failure = failure;
                    if (m.relay != null) {
                        m.relay.failed(m.subtaskIndex, failure.getMessage());
                    }
                }
                if (subscription != null && firstLocalMember() == null) {
                    // The RPC that failed may be the PushUpdate of this JVM's last reader leaving
                    // (or a re-subscribe for relayed members only). Nobody here reads any more:
                    // without the watch, the group would keep the subscription and its leader's
                    // connection (and the broker the region) for good. The relayed members, told
                    // of the failure, abandon their rings as they fail, which ends the group.
                    watch();
                }
            }
        }

        /**
         * Every reader of this JVM left while readers of other JVMs still read rings of the
         * subscription (a bounded job whose readers here finished first; or a cancelled job, whose
         * relayed readers can no longer tell us they left): the group keeps the subscription for
         * them and checks their rings every {@value #WATCH_MS} ms. Once none of them heartbeats
         * (each abandons its ring when it closes, and a dead one goes stale after the consumer
         * timeout), the group ends: the subscription closes and the broker unlinks its region.
         */
        private void watch() {
            if (relayedWatch != null) {
                return;
            }
            LOG.info(
                    "Push group {}: this JVM's readers left; keeping {} for relayed members {}",
                    key,
                    subscription,
                    members.keySet());
            relayedWatch =
                    scheduler()
                            .scheduleWithFixedDelay(
                                    () -> {
                                        synchronized (Group.this) {
                                            watchOnce();
                                        }
                                    },
                                    WATCH_MS,
                                    WATCH_MS,
                                    TimeUnit.MILLISECONDS);
        }

        /**
         * One run of the periodic watch. Nothing may escape it: the executor would cancel the
         * periodic task silently (the throwable kept in a future nobody reads), and the group would
         * keep the subscription, its region, its connection and its thread for good. This runs
         * after this JVM's readers left, when the job's user class loader may be closed already, so
         * an Error such as NoClassDefFoundError is a real possibility. It cannot tell whether a
         * relayed member still reads, so the group ends (a relayed reader still reading fails and
         * restores from its checkpoint, which beats a region that never goes away).
         */
        private void watchOnce() {
            try {
                endUnlessARelayedMemberReads();
            } catch (Throwable t) {
                LOG.error(
                        "Push group {} (subscription {}, members {}): its watch failed; ending it",
                        key,
                        subscription, // null when the failure came from ending it already
                        members.keySet(),
                        t);
                try {
                    members.clear();
                    reconcile(false); // each step of the ending runs even if one throws
                } catch (Throwable again) {
                    LOG.error("Push group {}: ending it failed", key, again);
                }
            }
        }

        private void endUnlessARelayedMemberReads() {
            if (members.isEmpty() || subscription == null) {
                return;
            }
            if (firstLocalMember() != null) {
                // A reader of this JVM joined again: the group lives as long as it does.
                relayedWatch.cancel(false);
                relayedWatch = null;
                return;
            }
            try {
                if (watchedRegion == null) {
                    watchedRegion = ShmRegion.map(Path.of(subscription.regionPath()));
                }
                long now = System.nanoTime();
                long limit = TimeUnit.MILLISECONDS.toNanos(geometry.consumerTimeoutMs());
                for (int i = 0; i < ringMembers.size(); i++) {
                    Member m = ringMembers.get(i);
                    if (m == null || m.relay == null) {
                        continue;
                    }
                    SlotRing ring = watchedRegion.ring(i);
                    long heartbeat = ring.consumerHeartbeatNanos();
                    // A reclaimed ring is never read again by the member it was made for (its
                    // reader fails instead), and the broker may have re-activated it for a next
                    // consumer with a fresh heartbeat: only the first generation counts. The
                    // broker's activation stored a heartbeat (a reader that has not attached yet
                    // has the same grace period); 0 means its reader abandoned it.
                    if (ring.state() == ShmLayout.RING_ACTIVE
                            && ring.generation() == FIRST_RING_GENERATION
                            && heartbeat != 0
                            && now - heartbeat <= limit) {
                        return; // still read
                    }
                }
                LOG.info("Push group {}: no relayed member reads any more; ending it", key);
            } catch (IOException | RuntimeException e) {
                LOG.info("Push group {}: its region is gone ({}); ending it", key, e.toString());
            }
            members.clear();
            reconcile(false);
        }

        /**
         * A member without a ring joined (or none has one yet): a new subscription with one ring
         * per member from their current positions, through the lowest member's connection.
         */
        private void subscribe() throws Exception {
            Member newLeader = firstLocalMember();
            if (newLeader == null) {
                if (connect == null) {
                    throw new IOException(
                            "no reader of this JVM is left to subscribe for subtasks "
                                    + members.keySet());
                }
                // Not in members: close() closes its connection with the subscription.
                newLeader = new Member(this, -1, connect.get(), null);
            }
            List<Integer> owners = new ArrayList<>(members.keySet());
            List<PushRingSpec> rings = new ArrayList<>(owners.size());
            for (Member m : members.values()) {
                rings.add(new PushRingSpec(m.subtaskIndex, m.splits()));
            }
            PushSubscription created;
            try {
                created =
                        newLeader
                                .client
                                .pushSubscribe(key.stream(), rings, geometry.subscribeOptions())
                                .get(geometry.rpcTimeoutMs(), TimeUnit.MILLISECONDS);
            } catch (Throwable e) { // an Error too: the group's own connection must not leak
                if (newLeader.subtaskIndex < 0) {
                    newLeader.client.close();
                }
                throw e;
            }
            LOG.info(
                    "Push group {}: {} subscribed {} for rings of subtasks {}",
                    key,
                    newLeader.subtaskIndex < 0
                            ? "the group's own connection"
                            : "subtask " + newLeader.subtaskIndex,
                    created,
                    owners);
            PushSubscription previous = subscription;
            Member previousLeader = leader;
            subscription = created;
            leader = newLeader;
            ringSubtasks = owners;
            ringMembers.clear();
            ringMembers.addAll(members.values());
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
                if (m.relay != null) {
                    m.relay.assigned(m.subtaskIndex, m.attachment);
                }
            }
            // Only now: a member that still reads the old region sees its new ring first.
            close(previous, previousLeader);
        }

        private void closeSubscription() {
            PushSubscription previous = subscription;
            Member previousLeader = leader;
            subscription = null;
            leader = null;
            ringMembers.clear();
            ringSubtasks = List.of();
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
            } catch (Throwable t) {
                // Best effort as well (the connection's close below ends the subscription), but
                // an Error is worth a warning: e.g. a class of the PushClose path that could not
                // be loaded any more because the job's class loader was closed.
                LOG.warn("PushClose of subscription {} failed", id, t);
            } finally {
                if (members.get(via.subtaskIndex) != via) {
                    // It left and handed its connection over to the group: closing it is what
                    // makes the broker unlink the region, whatever PushClose did.
                    via.client.close();
                }
            }
        }
    }
}
