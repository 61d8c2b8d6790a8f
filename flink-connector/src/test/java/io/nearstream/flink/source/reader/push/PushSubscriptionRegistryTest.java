package io.nearstream.flink.source.reader.push;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.Position;
import io.nearstream.client.PushRingSpec;
import io.nearstream.client.PushSplitStart;
import io.nearstream.client.StatusCode;
import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry.Attachment;
import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry.Geometry;
import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry.Key;
import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry.Member;
import io.nearstream.flink.source.testutils.Await;
import io.nearstream.flink.source.testutils.FakeNearstreamClient;
import io.nearstream.flink.source.testutils.PushTestRegion;
import io.nearstream.jni.ShmRegion;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The JVM-local push election, against fake brokers (one fake connection per reader). */
class PushSubscriptionRegistryTest {

    private static final Key KEY = new Key("127.0.0.1:7420", "s", "source-1");
    private static final Geometry GEOMETRY = new Geometry(8, 1 << 20, 5000, 1000);

    private final PushSubscriptionRegistry registry = new PushSubscriptionRegistry();

    /** A reader: its own connection and its splits with positions. */
    private static final class Reader {
        final FakeNearstreamClient client = new FakeNearstreamClient();
        final List<PushSplitStart> splits = new CopyOnWriteArrayList<>();
        Member member;

        Reader(int... streamlets) {
            for (int s : streamlets) {
                splits.add(new PushSplitStart(s, Position.EARLIEST));
            }
        }

        Member join(PushSubscriptionRegistry registry, Key key, int subtask) {
            member = registry.join(key, subtask, client, GEOMETRY, () -> List.copyOf(splits));
            return member;
        }
    }

    @Test
    void lowestSubtaskSubscribesOnceForEveryLocalReader() {
        Reader r0 = new Reader(0, 2);
        Reader r1 = new Reader(1, 3);
        r0.join(registry, KEY, 0);
        r1.join(registry, KEY, 1);

        // r0 subscribed alone first, then again with both rings when r1 joined.
        assertThat(r1.client.pushCalls()).isEmpty();
        Map<Long, List<PushRingSpec>> open = r0.client.openSubscriptions();
        assertThat(open).hasSize(1);
        List<PushRingSpec> rings = open.values().iterator().next();
        assertThat(rings)
                .containsExactly(new PushRingSpec(0, r0.splits), new PushRingSpec(1, r1.splits));
        assertThat(r0.member.isLeader()).isTrue();
        assertThat(r1.member.isLeader()).isFalse();

        Attachment a0 = r0.member.attachment();
        Attachment a1 = r1.member.attachment();
        assertThat(a0.subscriptionId()).isEqualTo(open.keySet().iterator().next());
        assertThat(a1.subscriptionId()).isEqualTo(a0.subscriptionId());
        assertThat(a1.regionPath()).isEqualTo(a0.regionPath());
        assertThat(a0.ringIndex()).isZero();
        assertThat(a1.ringIndex()).isEqualTo(1);
    }

    /** The readers' periodic work runs on one thread per group, which ends with the group. */
    @Test
    void theGroupsSchedulerRunsUntilItsLastMemberLeaves() throws Exception {
        Key key = new Key("127.0.0.1:7420", "sched-" + System.nanoTime(), "source-1");
        Reader r0 = new Reader(0);
        Reader r1 = new Reader(1);
        r0.join(registry, key, 0);
        r1.join(registry, key, 1);
        CountDownLatch ran0 = new CountDownLatch(3);
        CountDownLatch ran1 = new CountDownLatch(3);
        AtomicReference<String> thread = new AtomicReference<>();
        r0.member.schedule(
                () -> {
                    thread.set(Thread.currentThread().getName());
                    ran0.countDown();
                },
                0,
                5);
        r1.member.schedule(ran1::countDown, 0, 5);
        assertThat(ran0.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(ran1.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(thread.get()).isEqualTo("nearstream-push-" + key.stream());
        assertThat(schedulerThreads(key)).isEqualTo(1);

        r1.member.leave();
        assertThat(schedulerThreads(key)).isEqualTo(1); // r0 still reads
        r0.member.leave();
        for (int i = 0; i < 500 && schedulerThreads(key) > 0; i++) {
            Thread.sleep(10);
        }
        assertThat(schedulerThreads(key)).as("the group ended: its thread is gone").isZero();
    }

    private static long schedulerThreads(Key key) {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().equals("nearstream-push-" + key.stream()) && t.isAlive())
                .count();
    }

    @Test
    void aLowerSubtaskJoiningLaterTakesTheLeadAndTheOldSubscriptionCloses() {
        Reader r3 = new Reader(3);
        Reader r1 = new Reader(1);
        r3.join(registry, KEY, 3);
        long first = r3.member.attachment().subscriptionId();
        // The old subscription closes only after every member was told about the new one.
        List<Long> seenAtClose = new CopyOnWriteArrayList<>();
        r3.client.onPushClose(id -> seenAtClose.add(r3.member.attachment().subscriptionId()));
        r1.join(registry, KEY, 1);
        assertThat(seenAtClose).hasSize(1).doesNotContain(first);

        assertThat(r3.client.pushCalls()).last().isEqualTo("close " + first);
        assertThat(r3.client.openSubscriptions()).isEmpty();
        assertThat(r1.client.openSubscriptions().values())
                .containsExactly(
                        List.of(new PushRingSpec(1, r1.splits), new PushRingSpec(3, r3.splits)));
        assertThat(r1.member.attachment().ringIndex()).isZero();
        assertThat(r3.member.attachment().ringIndex()).isEqualTo(1);
        assertThat(r3.member.attachment().generation())
                .isEqualTo(r1.member.attachment().generation());
    }

    @Test
    void changedSplitsAreAPushUpdateOnTheSameRings() {
        Reader r0 = new Reader(0);
        Reader r1 = new Reader(1);
        r0.join(registry, KEY, 0);
        r1.join(registry, KEY, 1);
        Attachment before = r1.member.attachment();

        r1.splits.add(new PushSplitStart(5, new Position(1, 2, 3)));
        r1.member.splitsChanged();

        assertThat(r0.client.pushCalls())
                .last()
                .asString()
                .startsWith("update " + before.subscriptionId());
        assertThat(r0.client.openSubscriptions().get(before.subscriptionId()))
                .containsExactly(new PushRingSpec(0, r0.splits), new PushRingSpec(1, r1.splits));
        assertThat(r1.member.attachment()).isSameAs(before);
    }

    @Test
    void aLeavingLeaderHandsItsConnectionToTheGroupAndItsRingIsEmptied() {
        Reader r0 = new Reader(0);
        Reader r1 = new Reader(1);
        Reader r2 = new Reader(2);
        r0.join(registry, KEY, 0);
        r1.join(registry, KEY, 1);
        r2.join(registry, KEY, 2);
        Attachment before = r1.member.attachment();
        long id = before.subscriptionId();

        // Its connection carries the others' subscription: the group keeps it open.
        assertThat(r0.member.leave()).isFalse();

        assertThat(r0.client.isClosed()).isFalse();
        assertThat(r0.client.pushCalls()).last().asString().startsWith("update " + id);
        assertThat(r0.client.openSubscriptions().get(id))
                .containsExactly(
                        new PushRingSpec(0, List.of()),
                        new PushRingSpec(1, r1.splits),
                        new PushRingSpec(2, r2.splits));
        assertThat(r1.member.attachment()).isSameAs(before);
        assertThat(r2.client.pushCalls()).isEmpty();

        // Splits of the others still change through that connection.
        r2.splits.add(new PushSplitStart(7, Position.EARLIEST));
        r2.member.splitsChanged();
        assertThat(r0.client.openSubscriptions().get(id).get(2))
                .isEqualTo(new PushRingSpec(2, r2.splits));

        // The last one out closes the subscription and the connection the group took over.
        assertThat(r1.member.leave()).isTrue();
        assertThat(r2.member.leave()).isTrue();
        assertThat(r0.client.pushCalls()).last().isEqualTo("close " + id);
        assertThat(r0.client.isClosed()).isTrue();
        assertThat(registry.groupCount()).isZero();
    }

    @Test
    void aFollowerLeavingEmptiesItsRingAndTheLastOneClosesTheGroup() {
        Reader r0 = new Reader(0);
        Reader r1 = new Reader(1);
        r0.join(registry, KEY, 0);
        r1.join(registry, KEY, 1);
        long id = r0.member.attachment().subscriptionId();
        assertThat(r1.member.leave()).isTrue();
        assertThat(r0.client.openSubscriptions().get(id))
                .containsExactly(new PushRingSpec(0, r0.splits), new PushRingSpec(1, List.of()));

        assertThat(r0.member.leave()).isTrue();
        assertThat(r0.client.pushCalls()).last().isEqualTo("close " + id);
        assertThat(r0.client.openSubscriptions()).isEmpty();
        assertThat(registry.groupCount()).isZero();
    }

    @Test
    void theFirstSubscriptionWaitsForEveryAnnouncedPeer() {
        registry.peersKnown(KEY, List.of(0, 1, 3));
        Reader r3 = new Reader(3);
        Reader r0 = new Reader(0);
        Reader r1 = new Reader(1);
        r3.join(registry, KEY, 3);
        r0.join(registry, KEY, 0);
        assertThat(r3.member.attachment()).isNull();
        assertThat(r0.member.attachment()).isNull();
        r1.join(registry, KEY, 1);

        // One subscribe, by the lowest subtask, with a ring for each peer.
        assertThat(r0.client.pushCalls()).hasSize(1).first().asString().startsWith("subscribe");
        assertThat(r1.client.pushCalls()).isEmpty();
        assertThat(r3.client.pushCalls()).isEmpty();
        assertThat(r0.client.openSubscriptions().values())
                .containsExactly(
                        List.of(
                                new PushRingSpec(0, r0.splits),
                                new PushRingSpec(1, r1.splits),
                                new PushRingSpec(3, r3.splits)));
        assertThat(r3.member.attachment().ringIndex()).isEqualTo(2);
    }

    @Test
    void restoredReadersWaitForThePeersWordAndThenForThePeers() {
        registry.awaitPeers(KEY);
        Reader r1 = new Reader(1);
        r1.join(registry, KEY, 1);
        assertThat(r1.member.attachment()).isNull();

        Reader r0 = new Reader(0);
        registry.peersKnown(KEY, List.of(0, 1));
        assertThat(r1.member.attachment()).isNull();
        r0.join(registry, KEY, 0);
        assertThat(r0.client.openSubscriptions()).hasSize(1);
        assertThat(r1.member.attachment()).isNotNull();
    }

    @Test
    void aPeerThatNeverJoinsDelaysTheSubscriptionOnlyUntilTheWaitEnds() throws Exception {
        PushSubscriptionRegistry impatient = new PushSubscriptionRegistry(200);
        impatient.peersKnown(KEY, List.of(0, 1));
        Reader r0 = new Reader(0);
        r0.join(impatient, KEY, 0);
        assertThat(r0.member.attachment()).isNull();
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (r0.member.attachment() == null && System.nanoTime() < deadline) {
            Thread.sleep(20); // a reader polls its attachment like this while it waits
        }
        assertThat(r0.member.attachment()).isNotNull();
        assertThat(r0.client.openSubscriptions().values())
                .containsExactly(List.of(new PushRingSpec(0, r0.splits)));
    }

    @Test
    void otherSourcesAndFailuresAreSeparate() {
        Reader a = new Reader(0);
        Reader b = new Reader(0);
        a.join(registry, KEY, 5);
        b.join(registry, new Key(KEY.broker(), KEY.stream(), "source-2"), 0);
        assertThat(a.member.isLeader()).isTrue();
        assertThat(b.member.isLeader()).isTrue();
        assertThat(a.member.attachment().subscriptionId())
                .isNotEqualTo(b.member.attachment().subscriptionId());

        // A subscribe that fails (the leader's connection is gone) fails every member.
        Reader c = new Reader(4);
        c.client.close();
        c.join(registry, KEY, 0); // the lowest index: the new leader
        assertThat(a.member.failure()).hasMessageContaining("Push subscription of group");
        assertThat(c.member.failure()).isNotNull();
        assertThat(b.member.failure()).isNull();
    }

    @Test
    void aSubtaskJoiningAgainReplacesItsStaleMember() {
        Reader old0 = new Reader(0);
        Reader r1 = new Reader(1);
        old0.join(registry, KEY, 0);
        r1.join(registry, KEY, 1);
        long first = r1.member.attachment().subscriptionId();

        // A new attempt of subtask 0 joins while the old one never left.
        Reader new0 = new Reader(0);
        new0.join(registry, KEY, 0);

        assertThat(old0.client.pushCalls()).last().isEqualTo("close " + first);
        assertThat(new0.client.openSubscriptions().values())
                .containsExactly(
                        List.of(new PushRingSpec(0, new0.splits), new PushRingSpec(1, r1.splits)));
        assertThat(new0.member.attachment().ringIndex()).isZero();
        assertThat(r1.member.attachment().subscriptionId()).isNotEqualTo(first);

        // The stale member's late leave changes nothing.
        long current = new0.member.attachment().subscriptionId();
        old0.member.leave();
        assertThat(new0.client.openSubscriptions()).containsOnlyKeys(current);
    }

    /** Records what a group answers a member relayed from another JVM of the host. */
    private static final class RelayLog implements PushSubscriptionRegistry.RingRelay {
        final List<String> answers = new CopyOnWriteArrayList<>();
        volatile Attachment last;

        @Override
        public void assigned(int subtaskIndex, Attachment attachment) {
            last = attachment;
            answers.add(subtaskIndex + " ring " + attachment.ringIndex());
        }

        @Override
        public void failed(int subtaskIndex, String failure) {
            answers.add(subtaskIndex + " failed");
        }
    }

    /**
     * Two TaskManager JVMs on one host: the group of subtask 0's JVM waits for subtask 2 of the
     * other JVM, subscribes once with a ring for each, and keeps the relayed ring's splits current.
     */
    @Test
    void readersOfAnotherJvmOfTheHostGetTheirRingsFromTheOneSubscription() {
        Reader r0 = new Reader(0, 1);
        registry.peersKnown(KEY, List.of(0, 2));
        r0.join(registry, KEY, 0);
        assertThat(r0.client.pushCalls()).isEmpty(); // waits for subtask 2

        RelayLog relay = new RelayLog();
        List<PushSplitStart> splitsOf2 = List.of(new PushSplitStart(2, Position.EARLIEST));
        registry.relayed(KEY, 2, splitsOf2, false, GEOMETRY, relay, FakeNearstreamClient::new);

        assertThat(r0.client.pushCalls()).hasSize(1).first().asString().startsWith("subscribe");
        long id = r0.member.attachment().subscriptionId();
        assertThat(r0.client.openSubscriptions().get(id))
                .containsExactly(new PushRingSpec(0, r0.splits), new PushRingSpec(2, splitsOf2));
        assertThat(relay.answers).containsExactly("2 ring 1");
        assertThat(relay.last.subscriptionId()).isEqualTo(id);
        assertThat(relay.last.regionPath()).isEqualTo(r0.member.attachment().regionPath());

        // Its splits moved on: a PushUpdate on the same rings, no new subscription.
        Position later = new Position(1, 0, 4096);
        List<PushSplitStart> moved = List.of(new PushSplitStart(2, later));
        registry.relayed(KEY, 2, moved, false, GEOMETRY, relay, FakeNearstreamClient::new);
        assertThat(r0.client.pushCalls()).last().asString().startsWith("update " + id);
        assertThat(r0.client.openSubscriptions().get(id).get(1))
                .isEqualTo(new PushRingSpec(2, moved));

        // It left: its ring is emptied; the local reader keeps reading.
        registry.relayed(KEY, 2, List.of(), true, GEOMETRY, relay, FakeNearstreamClient::new);
        assertThat(r0.client.openSubscriptions().get(id).get(1))
                .isEqualTo(new PushRingSpec(2, List.of()));
        assertThat(r0.member.attachment().subscriptionId()).isEqualTo(id);
    }

    @Test
    void aRelayedReaderHearsOfAFailedSubscribe() {
        Reader r0 = new Reader(0);
        r0.client.close(); // the subscribe fails
        registry.readerOpened(KEY);
        registry.peersKnown(KEY, List.of(0, 1));
        RelayLog relay = new RelayLog();
        registry.relayed(
                KEY,
                1,
                List.of(new PushSplitStart(1, Position.EARLIEST)),
                false,
                GEOMETRY,
                relay,
                FakeNearstreamClient::new);
        r0.join(registry, KEY, 0);
        assertThat(relay.answers).containsExactly("1 failed");
        assertThat(r0.member.failure()).isNotNull();
    }

    /**
     * The local readers of the holding JVM leave first (a bounded job whose splits here finished
     * earlier, or a cancel): the group keeps the subscription for the relayed reader instead of
     * pulling its ring away, and ends it once no relayed reader reads any more (here: the fake
     * broker's region cannot be mapped, which reads as gone) or the last one says it left.
     */
    @Test
    void aGroupWhoseLocalReadersLeftKeepsTheSubscriptionForRelayedReadersUntilTheyAreGone()
            throws Exception {
        Key key = new Key("127.0.0.1:7420", "watch-" + System.nanoTime(), "source-1");
        Reader r0 = new Reader(0);
        registry.peersKnown(key, List.of(0, 1));
        r0.join(registry, key, 0);
        RelayLog relay = new RelayLog();
        registry.relayed(
                key,
                1,
                List.of(new PushSplitStart(1, Position.EARLIEST)),
                false,
                GEOMETRY,
                relay,
                FakeNearstreamClient::new);
        long id = r0.member.attachment().subscriptionId();

        assertThat(r0.member.leave()).as("the group keeps the leader's connection").isFalse();
        assertThat(r0.client.openSubscriptions()).as("kept for the relayed reader").containsKey(id);

        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!r0.client.openSubscriptions().isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(r0.client.pushCalls()).last().isEqualTo("close " + id);
        assertThat(r0.client.openSubscriptions()).isEmpty();
        assertThat(registry.groupCount()).isZero();
    }

    /**
     * A cancelled job: this JVM's reader left, and the relayed reader's word that it left cannot
     * come (the enumerator is gone); it abandons its ring as it closes. The group keeps the
     * subscription while the ring's activation heartbeat is fresh, and ends it as soon as the ring
     * is abandoned, not a consumer timeout later, so the broker unlinks the region at once.
     */
    @Test
    void anAbandonedRelayedRingEndsTheGroupBeforeTheConsumerTimeout(@TempDir Path dir)
            throws Exception {
        Path path = dir.resolve("region");
        PushTestRegion.create(path, 7, 8, 64 * 1024, 0, 1);
        Key key = new Key("127.0.0.1:7420", "abandon-" + System.nanoTime(), "source-1");
        Reader r0 = new Reader(0);
        r0.client.setPushRegion(path.toString(), 7);
        registry.peersKnown(key, List.of(0, 1));
        r0.join(registry, key, 0);
        List<PushSplitStart> splits = List.of(new PushSplitStart(1, Position.EARLIEST));
        registry.relayed(
                key, 1, splits, false, GEOMETRY, new RelayLog(), FakeNearstreamClient::new);
        long id = r0.member.attachment().subscriptionId();
        r0.member.leave();

        Thread.sleep(5 * PushSubscriptionRegistry.WATCH_MS);
        assertThat(r0.client.openSubscriptions())
                .as("kept while the relayed ring's activation heartbeat is fresh")
                .containsKey(id);

        long abandoned = System.nanoTime();
        try (ShmRegion mapped = ShmRegion.map(path)) {
            mapped.ring(1).abandon();
        }
        long deadline = abandoned + TimeUnit.MILLISECONDS.toNanos(GEOMETRY.consumerTimeoutMs());
        while (!r0.client.openSubscriptions().isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(r0.client.openSubscriptions())
                .as("closed within a consumer timeout of the abandon")
                .isEmpty();
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - abandoned))
                .as("ms from the abandon to the close")
                .isLessThan(10 * PushSubscriptionRegistry.WATCH_MS);
        assertThat(registry.groupCount()).isZero();
    }

    @Test
    void theLastRelayedReaderLeavingEndsAGroupWithoutLocalReaders() {
        Key key = new Key("127.0.0.1:7420", "left-" + System.nanoTime(), "source-1");
        PushSubscriptionRegistry slowWatch = new PushSubscriptionRegistry();
        Reader r0 = new Reader(0);
        slowWatch.peersKnown(key, List.of(0, 1));
        r0.join(slowWatch, key, 0);
        RelayLog relay = new RelayLog();
        List<PushSplitStart> splits = List.of(new PushSplitStart(1, Position.EARLIEST));
        slowWatch.relayed(key, 1, splits, false, GEOMETRY, relay, FakeNearstreamClient::new);
        long id = r0.member.attachment().subscriptionId();
        r0.member.leave();

        slowWatch.relayed(key, 1, List.of(), true, GEOMETRY, relay, FakeNearstreamClient::new);
        assertThat(r0.client.pushCalls()).last().isEqualTo("close " + id);
        assertThat(slowWatch.groupCount()).isZero();
    }

    /**
     * A bounded job restored from a checkpoint: this JVM's readers emitted their last records and
     * left before the other JVM's reader asked for its ring. The relayed reader waits only while a
     * reader of this JVM may still join; once the last one is done, the group subscribes for it
     * through a connection of its own, and closes both when the relayed reader leaves.
     */
    @Test
    void relayedReadersWaitForThisJvmsReadersOnlyWhileOneMayStillJoin() {
        Key key = new Key("127.0.0.1:7420", "done-" + System.nanoTime(), "source-1");
        List<FakeNearstreamClient> opened = new CopyOnWriteArrayList<>();
        Supplier<NearstreamClient> connect =
                () -> {
                    FakeNearstreamClient c = new FakeNearstreamClient();
                    opened.add(c);
                    return c;
                };
        Object reader0 = registry.readerOpened(key);
        Object reader3 = registry.readerOpened(key);
        RelayLog relay = new RelayLog();
        List<PushSplitStart> splits = List.of(new PushSplitStart(1, Position.EARLIEST));
        registry.relayed(key, 1, splits, false, GEOMETRY, relay, connect);
        assertThat(relay.answers).as("waits for subtasks 0 and 3 of this JVM").isEmpty();

        registry.readerDone(key, reader0);
        assertThat(relay.answers).as("subtask 3 may still join").isEmpty();
        registry.readerDone(key, reader3);
        assertThat(relay.answers).containsExactly("1 ring 0");
        assertThat(opened).hasSize(1);
        FakeNearstreamClient own = opened.get(0);
        long id = relay.last.subscriptionId();
        assertThat(own.openSubscriptions()).containsOnlyKeys(id);
        assertThat(own.openSubscriptions().get(id)).containsExactly(new PushRingSpec(1, splits));

        registry.relayed(key, 1, List.of(), true, GEOMETRY, relay, connect);
        assertThat(own.pushCalls()).last().isEqualTo("close " + id);
        assertThat(own.isClosed()).as("the group's own connection closes with it").isTrue();
        assertThat(registry.groupCount()).isZero();
    }

    /** A subtask's old attempt closing after its new attempt opened does not end the wait. */
    @Test
    void anOldAttemptClosingLateStillLeavesItsNewAttemptToJoin() {
        Key key = new Key("127.0.0.1:7420", "attempts-" + System.nanoTime(), "source-1");
        Object oldAttempt = registry.readerOpened(key);
        Object newAttempt = registry.readerOpened(key);
        RelayLog relay = new RelayLog();
        List<PushSplitStart> splits = List.of(new PushSplitStart(1, Position.EARLIEST));
        registry.relayed(key, 1, splits, false, GEOMETRY, relay, FakeNearstreamClient::new);
        registry.readerDone(key, oldAttempt);
        assertThat(relay.answers).as("the new attempt may still join").isEmpty();

        Reader r0 = new Reader(0);
        r0.join(registry, key, 0);
        assertThat(relay.answers).containsExactly("1 ring 1");
        registry.readerDone(key, newAttempt);
        r0.member.leave();
        registry.relayed(key, 1, List.of(), true, GEOMETRY, relay, FakeNearstreamClient::new);
        assertThat(registry.groupCount()).isZero();
    }

    /** At a job start the relayed reader asks first: one subscription carries both rings. */
    @Test
    void aRelayedReaderAskingBeforeThisJvmsReaderJoinsSharesItsFirstSubscription() {
        Key key = new Key("127.0.0.1:7420", "start-" + System.nanoTime(), "source-1");
        registry.readerOpened(key);
        RelayLog relay = new RelayLog();
        List<PushSplitStart> splits = List.of(new PushSplitStart(1, Position.EARLIEST));
        registry.relayed(key, 1, splits, false, GEOMETRY, relay, FakeNearstreamClient::new);
        assertThat(relay.answers).isEmpty();

        Reader r0 = new Reader(0);
        r0.join(registry, key, 0);
        assertThat(r0.client.pushCalls()).hasSize(1);
        assertThat(relay.answers).containsExactly("1 ring 1");
        r0.member.leave();
        registry.relayed(key, 1, List.of(), true, GEOMETRY, relay, FakeNearstreamClient::new);
        assertThat(registry.groupCount()).isZero();
    }

    /**
     * This JVM's only reader leaves a group that holds a ring for a reader of another JVM, and the
     * PushUpdate emptying its ring fails: the group must still watch the relayed ring, and end
     * (closing the connection it took over, so the broker unlinks the region) once it is not read.
     */
    @Test
    void aFailedPushUpdateAsTheLastLocalReaderLeavesStillEndsTheGroup() throws Exception {
        Key key = new Key("127.0.0.1:7420", "failed-leave-" + System.nanoTime(), "source-1");
        Reader r0 = keptForARelayedReader(key);
        long id = r0.member.attachment().subscriptionId();
        r0.client.failPushUpdates(StatusCode.IO_ERROR);
        RelayLog relay = relays.get(key);

        assertThat(r0.member.leave()).as("the group keeps the leader's connection").isFalse();
        assertThat(r0.client.pushCalls()).last().isEqualTo("failed update " + id);
        assertThat(relay.answers).as("the relayed reader hears of it").contains("1 failed");

        // The fake broker's region cannot be mapped, which the watch reads as gone.
        awaitGroupEnded(key, r0);
    }

    /**
     * A group ending after the job's class loader closed: PushClose throws NoClassDefFoundError
     * (its request class was never loaded). The connection must close all the same, as it is what
     * makes the broker unlink the region, and the group's thread must end.
     */
    @Test
    void anErrorFromPushCloseAsTheWatchEndsTheGroupStillClosesItsConnection() throws Exception {
        Key key = new Key("127.0.0.1:7420", "close-error-" + System.nanoTime(), "source-1");
        Reader r0 = keptForARelayedReader(key);
        long id = r0.member.attachment().subscriptionId();
        r0.client.onPushClose(
                closing -> {
                    throw new NoClassDefFoundError(
                            "io/nearstream/client/ProtocolCodec$PushCloseRequest");
                });

        assertThat(r0.member.leave()).isFalse();
        assertThat(r0.client.openSubscriptions()).containsKey(id);
        awaitGroupEnded(key, r0);
    }

    /**
     * The watch's end throws an Error past the PushClose (here: closing the connection): the group
     * is still removed and its thread ends, instead of the periodic task dying with the group in
     * place. (Two layers see to it, each enough here: the ending's steps run whatever an earlier
     * one threw, and the periodic task catches what escapes and ends the group.)
     */
    @Test
    void anErrorClosingTheConnectionAsTheWatchEndsTheGroupStillEndsIt() throws Exception {
        Key key = new Key("127.0.0.1:7420", "conn-error-" + System.nanoTime(), "source-1");
        Reader r0 = keptForARelayedReader(key);
        r0.client.throwOnClose(new NoClassDefFoundError("io/netty/SomethingNeverLoaded"));

        assertThat(r0.member.leave()).isFalse();
        awaitGroupEnded(key, r0);
    }

    /** The classes the group loads up front for its end exist under these names. */
    @Test
    void theClassesAGroupsEndNeedsArePreloaded() {
        assertThat(PushSubscriptionRegistry.END_PATH_CLASSES).isNotEmpty();
        assertThat(PushSubscriptionRegistry.preloadEndPathClasses()).isEmpty();
    }

    private final Map<Key, RelayLog> relays = new ConcurrentHashMap<>();

    /** Subtask 0 of this JVM leads a subscription with a ring for subtask 1 of another JVM. */
    private Reader keptForARelayedReader(Key key) {
        Reader r0 = new Reader(0);
        registry.peersKnown(key, List.of(0, 1));
        r0.join(registry, key, 0);
        RelayLog relay = new RelayLog();
        relays.put(key, relay);
        List<PushSplitStart> splits = List.of(new PushSplitStart(1, Position.EARLIEST));
        registry.relayed(key, 1, splits, false, GEOMETRY, relay, FakeNearstreamClient::new);
        assertThat(relay.answers).containsExactly("1 ring 1");
        return r0;
    }

    /** The group ended: the leader's connection closed, the group is gone, and its thread. */
    private void awaitGroupEnded(Key key, Reader leader) throws Exception {
        Await.until(
                "the group ends",
                Duration.ofSeconds(10),
                () ->
                        leader.client.isClosed()
                                && registry.groupCount() == 0
                                && schedulerThreads(key) == 0,
                () ->
                        "connection closed "
                                + leader.client.isClosed()
                                + ", groups "
                                + registry.groupCount()
                                + ", scheduler threads "
                                + schedulerThreads(key)
                                + ", push calls "
                                + leader.client.pushCalls());
        assertThat(leader.client.openSubscriptions()).isEmpty();
    }
}
