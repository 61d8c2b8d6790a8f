package io.nearstream.flink.source.enumerator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.Position;
import io.nearstream.client.PushSplitStart;
import io.nearstream.client.StatusCode;
import io.nearstream.flink.source.NearstreamException;
import io.nearstream.flink.source.NearstreamStartingPositions;
import io.nearstream.flink.source.NearstreamStoppingPositions;
import io.nearstream.flink.source.event.PushPeersEvent;
import io.nearstream.flink.source.event.PushRingAssignedEvent;
import io.nearstream.flink.source.event.PushRingRequestEvent;
import io.nearstream.flink.source.event.ReaderStartedEvent;
import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry.Attachment;
import io.nearstream.flink.source.split.NearstreamSplit;
import io.nearstream.flink.source.testutils.FakeNearstreamClient;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import javax.annotation.Nullable;
import org.apache.flink.api.connector.source.SourceEvent;
import org.apache.flink.api.connector.source.SplitsAssignment;
import org.apache.flink.connector.testutils.source.reader.TestingSplitEnumeratorContext;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The enumerator with a fake broker: discovery, positions, assignment rules, bounded end. */
class NearstreamSourceEnumeratorTest {

    private static final String STREAM = "s";
    private static final String LOOPBACK_BROKER = "127.0.0.1:7420";

    private FakeNearstreamClient client;

    @BeforeEach
    void setUp() {
        client = new FakeNearstreamClient();
    }

    private NearstreamSourceEnumerator enumerator(
            TestingSplitEnumeratorContext<NearstreamSplit> context,
            String broker,
            NearstreamStartingPositions start,
            @Nullable NearstreamStoppingPositions stop,
            long discoveryIntervalMs,
            NearstreamEnumState state) {
        return new NearstreamSourceEnumerator(
                context,
                broker,
                STREAM,
                address -> client,
                start,
                stop,
                discoveryIntervalMs,
                1_000,
                /* followerReads= */ false,
                state);
    }

    private NearstreamSourceEnumerator unbounded(
            TestingSplitEnumeratorContext<NearstreamSplit> context) {
        return enumerator(
                context,
                LOOPBACK_BROKER,
                NearstreamStartingPositions.earliest(),
                null,
                -1,
                NearstreamEnumState.initial());
    }

    private static void register(
            TestingSplitEnumeratorContext<NearstreamSplit> context,
            NearstreamSourceEnumerator enumerator,
            int subtask,
            String host) {
        context.registerReader(subtask, host);
        enumerator.addReader(subtask);
        // Every reader announces its push election scope when it starts (one JVM per host here).
        enumerator.handleSourceEvent(subtask, new ReaderStartedEvent("jvm@" + host, Set.of()));
    }

    private static Map<Integer, List<Integer>> streamletsBySubtask(
            TestingSplitEnumeratorContext<NearstreamSplit> context) {
        return context.getSplitAssignments().entrySet().stream()
                .filter(e -> !e.getValue().getAssignedSplits().isEmpty())
                .collect(
                        Collectors.toMap(
                                Map.Entry::getKey,
                                e ->
                                        e.getValue().getAssignedSplits().stream()
                                                .map(NearstreamSplit::streamlet)
                                                .sorted()
                                                .collect(Collectors.toList())));
    }

    private static List<NearstreamSplit> allAssigned(
            TestingSplitEnumeratorContext<NearstreamSplit> context) {
        List<NearstreamSplit> out = new ArrayList<>();
        context.getSplitAssignments().values().forEach(a -> out.addAll(a.getAssignedSplits()));
        out.sort((a, b) -> Integer.compare(a.streamlet(), b.streamlet()));
        return out;
    }

    @Test
    void assignsOneSplitPerStreamletByStreamletModParallelism() {
        client.createStream(STREAM, 5, 1024);
        TestingSplitEnumeratorContext<NearstreamSplit> context =
                new TestingSplitEnumeratorContext<>(2);
        NearstreamSourceEnumerator enumerator = unbounded(context);
        enumerator.start();
        register(context, enumerator, 0, "localhost");
        register(context, enumerator, 1, "localhost");

        context.triggerAllActions();

        assertThat(streamletsBySubtask(context))
                .containsEntry(0, List.of(0, 2, 4))
                .containsEntry(1, List.of(1, 3));
        assertThat(allAssigned(context))
                .allSatisfy(
                        s -> {
                            assertThat(s.stream()).isEqualTo(STREAM);
                            assertThat(s.startingPosition()).isEqualTo(Position.EARLIEST);
                            assertThat(s.stoppingPosition()).isEmpty();
                        });
        // Unbounded: readers are never told that no more splits come.
        assertThat(context.getSplitAssignments().get(0).hasReceivedNoMoreSplitsSignal()).isFalse();
    }

    @Test
    void discoveryRunsOnTheWorkerAndAssignmentWaitsForEveryReader() {
        client.createStream(STREAM, 2, 1024);
        TestingSplitEnumeratorContext<NearstreamSplit> context =
                new TestingSplitEnumeratorContext<>(2);
        NearstreamSourceEnumerator enumerator = unbounded(context);

        enumerator.start();
        assertThat(client.metadataCount()).isZero(); // nothing on the coordinator thread

        context.getExecutorService().triggerAll(); // the discovery, not the grace timer
        register(context, enumerator, 1, "localhost");
        assertThat(context.getSplitAssignments()).isEmpty();
        assertThat(enumerator.unassignedSplits()).hasSize(2);

        register(context, enumerator, 0, "localhost");
        assertThat(streamletsBySubtask(context))
                .containsEntry(0, List.of(0))
                .containsEntry(1, List.of(1));
        assertThat(enumerator.unassignedSplits()).isEmpty();
    }

    @Test
    void aReaderOverdueForRegistrationNoLongerHoldsUpTheOthers() {
        client.createStream(STREAM, 4, 1024);
        TestingSplitEnumeratorContext<NearstreamSplit> context =
                new TestingSplitEnumeratorContext<>(4);
        NearstreamSourceEnumerator enumerator =
                enumerator(
                        context,
                        LOOPBACK_BROKER,
                        NearstreamStartingPositions.earliest(),
                        NearstreamStoppingPositions.latest(),
                        -1,
                        NearstreamEnumState.initial());
        enumerator.start();
        // A batch job scheduled in waves: subtasks 2 and 3 start after 0 and 1 finished.
        register(context, enumerator, 0, "localhost");
        register(context, enumerator, 1, "localhost");
        context.getExecutorService().triggerAll();
        assertThat(context.getSplitAssignments()).isEmpty();

        context.getExecutorService().triggerPeriodicScheduledTasks(); // the grace period ends

        assertThat(streamletsBySubtask(context))
                .containsEntry(0, List.of(0))
                .containsEntry(1, List.of(1))
                .hasSize(2);
        // 0 and 1 can finish: nothing else will come to them.
        assertThat(context.getSplitAssignments().get(0).hasReceivedNoMoreSplitsSignal()).isTrue();
        assertThat(context.getSplitAssignments().get(1).hasReceivedNoMoreSplitsSignal()).isTrue();
        register(context, enumerator, 2, "localhost");
        register(context, enumerator, 3, "localhost");
        assertThat(streamletsBySubtask(context))
                .containsEntry(2, List.of(2))
                .containsEntry(3, List.of(3));
        for (int i = 0; i < 4; i++) {
            assertThat(context.getSplitAssignments().get(i).hasReceivedNoMoreSplitsSignal())
                    .isTrue();
        }
    }

    @Test
    void prefersReadersOnTheBrokersHost() {
        client.createStream(STREAM, 4, 1024);
        TestingSplitEnumeratorContext<NearstreamSplit> context =
                new TestingSplitEnumeratorContext<>(4);
        NearstreamSourceEnumerator enumerator =
                enumerator(
                        context,
                        "10.1.2.3:7420",
                        NearstreamStartingPositions.earliest(),
                        null,
                        -1,
                        NearstreamEnumState.initial());
        enumerator.start();
        register(context, enumerator, 0, "10.9.9.9");
        register(context, enumerator, 1, "10.1.2.3");
        register(context, enumerator, 2, "10.9.9.8");
        register(context, enumerator, 3, "10.1.2.3");

        context.triggerAllActions();

        // Local readers 1 and 3 take streamlet mod 2 among themselves.
        assertThat(streamletsBySubtask(context))
                .containsOnlyKeys(1, 3)
                .containsEntry(1, List.of(0, 2))
                .containsEntry(3, List.of(1, 3));
    }

    @Test
    void withNoReaderOnTheBrokersHostFallsBackToModulo() {
        client.createStream(STREAM, 3, 1024);
        TestingSplitEnumeratorContext<NearstreamSplit> context =
                new TestingSplitEnumeratorContext<>(2);
        NearstreamSourceEnumerator enumerator =
                enumerator(
                        context,
                        "10.1.2.3:7420",
                        NearstreamStartingPositions.earliest(),
                        null,
                        -1,
                        NearstreamEnumState.initial());
        enumerator.start();
        register(context, enumerator, 0, "10.9.9.9");
        register(context, enumerator, 1, "10.9.9.8");

        context.triggerAllActions();

        assertThat(streamletsBySubtask(context))
                .containsEntry(0, List.of(0, 2))
                .containsEntry(1, List.of(1));
    }

    @Test
    void boundedSourceStopsAtTheTailsAndSignalsNoMoreSplitsToEveryReader() {
        client.createStream(STREAM, 3, 1024);
        client.appendRecords(STREAM, 0, 1, "a", "b");
        client.appendRecords(STREAM, 1, 1, "c");
        TestingSplitEnumeratorContext<NearstreamSplit> context =
                new TestingSplitEnumeratorContext<>(4); // one reader stays idle
        NearstreamSourceEnumerator enumerator =
                enumerator(
                        context,
                        LOOPBACK_BROKER,
                        NearstreamStartingPositions.earliest(),
                        NearstreamStoppingPositions.latest(),
                        1_000, // ignored: bounded sources discover once
                        NearstreamEnumState.initial());
        enumerator.start();
        for (int i = 0; i < 4; i++) {
            register(context, enumerator, i, "localhost");
        }

        context.triggerAllActions();
        context.triggerAllActions();

        assertThat(client.metadataCount()).as("one discovery").isEqualTo(1);
        assertThat(allAssigned(context))
                .extracting(s -> s.stoppingPosition().orElseThrow())
                .containsExactly(client.tail(STREAM, 0), client.tail(STREAM, 1), Position.EARLIEST);
        for (int i = 0; i < 4; i++) {
            assertThat(context.getSplitAssignments().get(i).hasReceivedNoMoreSplitsSignal())
                    .as("reader %s", i)
                    .isTrue();
        }
    }

    @Test
    void latestStartsAtTheTailsSeenByDiscovery() {
        client.createStream(STREAM, 2, 1024);
        client.appendRecords(STREAM, 0, 1, "old");
        TestingSplitEnumeratorContext<NearstreamSplit> context =
                new TestingSplitEnumeratorContext<>(1);
        NearstreamSourceEnumerator enumerator =
                enumerator(
                        context,
                        LOOPBACK_BROKER,
                        NearstreamStartingPositions.latest(),
                        null,
                        -1,
                        NearstreamEnumState.initial());
        enumerator.start();
        register(context, enumerator, 0, "localhost");

        context.triggerAllActions();

        assertThat(allAssigned(context))
                .extracting(NearstreamSplit::startingPosition)
                .containsExactly(client.tail(STREAM, 0), Position.EARLIEST);
    }

    @Test
    void timestampAndSpecificStartsAreResolvedBeforeAssignment() {
        client.createStream(STREAM, 2, 1024);
        client.appendRecords(STREAM, 0, 100, "a");
        Position at200 = client.appendRecords(STREAM, 0, 200, "b");
        client.appendRecords(STREAM, 1, 50, "c");

        TestingSplitEnumeratorContext<NearstreamSplit> byTime =
                new TestingSplitEnumeratorContext<>(1);
        NearstreamSourceEnumerator e1 =
                enumerator(
                        byTime,
                        LOOPBACK_BROKER,
                        NearstreamStartingPositions.timestamp(150),
                        null,
                        -1,
                        NearstreamEnumState.initial());
        e1.start();
        register(byTime, e1, 0, "localhost");
        byTime.triggerAllActions();
        assertThat(allAssigned(byTime))
                .extracting(NearstreamSplit::startingPosition)
                .containsExactly(at200, client.tail(STREAM, 1));

        TestingSplitEnumeratorContext<NearstreamSplit> specific =
                new TestingSplitEnumeratorContext<>(1);
        NearstreamSourceEnumerator e2 =
                enumerator(
                        specific,
                        LOOPBACK_BROKER,
                        NearstreamStartingPositions.specific(Map.of(0, at200)),
                        null,
                        -1,
                        NearstreamEnumState.initial());
        e2.start();
        register(specific, e2, 0, "localhost");
        specific.triggerAllActions();
        assertThat(allAssigned(specific))
                .extracting(NearstreamSplit::startingPosition)
                .containsExactly(at200, Position.EARLIEST);
    }

    @Test
    void periodicDiscoveryPicksUpAStreamCreatedLaterFromItsEarliestData() {
        TestingSplitEnumeratorContext<NearstreamSplit> context =
                new TestingSplitEnumeratorContext<>(1);
        NearstreamSourceEnumerator enumerator =
                enumerator(
                        context,
                        LOOPBACK_BROKER,
                        NearstreamStartingPositions.latest(),
                        null,
                        1_000,
                        NearstreamEnumState.initial());
        enumerator.start();
        register(context, enumerator, 0, "localhost");

        context.triggerAllActions(); // the stream does not exist yet: no failure, no splits
        assertThat(context.getSplitAssignments()).isEmpty();

        client.createStream(STREAM, 2, 1024);
        client.appendRecords(STREAM, 0, 1, "written before discovery");
        context.triggerAllActions();

        assertThat(allAssigned(context))
                .extracting(NearstreamSplit::startingPosition)
                .containsOnly(Position.EARLIEST);
        assertThat(allAssigned(context)).hasSize(2);

        context.triggerAllActions(); // nothing new
        assertThat(allAssigned(context)).hasSize(2);
    }

    @Test
    void periodicDiscoveryToleratesRetriableBrokerErrors() {
        client.createStream(STREAM, 1, 1024);
        client.failMetadata(StatusCode.SHUTTING_DOWN);
        TestingSplitEnumeratorContext<NearstreamSplit> context =
                new TestingSplitEnumeratorContext<>(1);
        NearstreamSourceEnumerator enumerator =
                enumerator(
                        context,
                        LOOPBACK_BROKER,
                        NearstreamStartingPositions.earliest(),
                        null,
                        1_000,
                        NearstreamEnumState.initial());
        enumerator.start();
        register(context, enumerator, 0, "localhost");

        context.triggerAllActions();
        assertThat(context.getSplitAssignments()).isEmpty();

        client.failMetadata(null);
        context.triggerAllActions();
        assertThat(allAssigned(context)).hasSize(1);
    }

    @Test
    void aMissingStreamFailsASourceThatDiscoversOnce() {
        TestingSplitEnumeratorContext<NearstreamSplit> context =
                new TestingSplitEnumeratorContext<>(1);
        NearstreamSourceEnumerator enumerator =
                enumerator(
                        context,
                        LOOPBACK_BROKER,
                        NearstreamStartingPositions.earliest(),
                        NearstreamStoppingPositions.latest(),
                        -1,
                        NearstreamEnumState.initial());
        enumerator.start();

        assertThatThrownBy(context::triggerAllActions)
                .isInstanceOf(NearstreamException.class)
                .hasMessageContaining("Stream 's' does not exist on 127.0.0.1:7420");
    }

    @Test
    void splitsHandedBackGoToTheSameSubtaskWhenItRegistersAgain() {
        client.createStream(STREAM, 4, 1024);
        TestingSplitEnumeratorContext<NearstreamSplit> context =
                new TestingSplitEnumeratorContext<>(2);
        NearstreamSourceEnumerator enumerator = unbounded(context);
        enumerator.start();
        register(context, enumerator, 0, "localhost");
        register(context, enumerator, 1, "localhost");
        context.triggerAllActions();
        List<NearstreamSplit> ofReader1 =
                new ArrayList<>(context.getSplitAssignments().get(1).getAssignedSplits());

        // Reader 1 fails: it is unregistered, its splits come back with progress.
        context.registeredReaders().remove(1);
        List<NearstreamSplit> returned = new ArrayList<>();
        for (NearstreamSplit s : ofReader1) {
            returned.add(s.withStartingPosition(new Position(1, 1, 96), 2));
        }
        enumerator.addSplitsBack(returned, 1);
        assertThat(enumerator.unassignedSplits()).containsExactlyInAnyOrderElementsOf(returned);
        assertThat(enumerator.snapshotState(1).unassignedSplits())
                .containsExactlyInAnyOrderElementsOf(returned);

        register(context, enumerator, 1, "localhost");

        assertThat(context.getSplitAssignments().get(1).getAssignedSplits()).containsAll(returned);
        assertThat(enumerator.unassignedSplits()).isEmpty();
    }

    @Test
    void aRestoredEnumeratorDoesNotAssignAgainWhatReadersAlreadyOwn() {
        client.createStream(STREAM, 3, 1024);
        TestingSplitEnumeratorContext<NearstreamSplit> first =
                new TestingSplitEnumeratorContext<>(1);
        NearstreamSourceEnumerator enumerator = unbounded(first);
        enumerator.start();
        register(first, enumerator, 0, "localhost");
        first.triggerAllActions();
        NearstreamEnumState state = enumerator.snapshotState(7);
        assertThat(state.assignedSplits()).hasSize(3);
        assertThat(state.initialDiscoveryFinished()).isTrue();

        TestingSplitEnumeratorContext<NearstreamSplit> restored =
                new TestingSplitEnumeratorContext<>(2);
        NearstreamSourceEnumerator again =
                enumerator(
                        restored,
                        LOOPBACK_BROKER,
                        NearstreamStartingPositions.earliest(),
                        null,
                        -1,
                        state);
        again.start();
        register(restored, again, 0, "localhost");
        register(restored, again, 1, "localhost");
        restored.triggerAllActions();

        assertThat(restored.getSplitAssignments()).isEmpty();
        assertThat(again.snapshotState(8)).isEqualTo(state);
    }

    @Test
    void closeClosesTheClient() throws Exception {
        client.createStream(STREAM, 1, 1024);
        TestingSplitEnumeratorContext<NearstreamSplit> context =
                new TestingSplitEnumeratorContext<>(1);
        NearstreamSourceEnumerator enumerator = unbounded(context);
        enumerator.start();
        context.triggerAllActions();

        enumerator.close();

        assertThat(client.isClosed()).isTrue();
    }

    @Test
    void ownerSelectionIsDeterministic() {
        assertThat(SplitOwnerSelector.owner(7, 3, List.of())).isEqualTo(1);
        assertThat(SplitOwnerSelector.owner(7, 3, List.of(2))).isEqualTo(2);
        assertThat(SplitOwnerSelector.owner(7, 4, List.of(0, 3))).isEqualTo(3);
    }

    @Test
    void brokerLocalityComparesNamesAndAddresses() {
        BrokerLocality remote = BrokerLocality.resolve("10.1.2.3:7420");
        assertThat(remote.isLocal("10.1.2.3")).isTrue();
        assertThat(remote.isLocal("10.1.2.4")).isFalse();
        assertThat(remote.isLocal(null)).isFalse();

        assertThat(BrokerLocality.resolve("127.0.0.1:7420").isLocal("any-host")).isTrue();
        assertThat(BrokerLocality.hostOf("[::1]:7420")).isEqualTo("::1");
    }

    /** Records assignments and events in the order the enumerator made them. */
    private static final class OrderedContext
            extends TestingSplitEnumeratorContext<NearstreamSplit> {
        final List<String> log = new ArrayList<>();

        OrderedContext(int parallelism) {
            super(parallelism);
        }

        @Override
        public void sendEventToSourceReader(int subtaskId, SourceEvent event) {
            if (event instanceof PushPeersEvent peers) {
                log.add(
                        "peers "
                                + subtaskId
                                + " "
                                + peers.subtasks()
                                + (peers.relayed() ? " via " + peers.relayTo() : ""));
            } else {
                log.add(subtaskId + " <- " + event);
            }
            super.sendEventToSourceReader(subtaskId, event);
        }

        @Override
        public void assignSplits(SplitsAssignment<NearstreamSplit> assignment) {
            assignment
                    .assignment()
                    .forEach(
                            (reader, splits) -> log.add("splits " + reader + " x" + splits.size()));
            super.assignSplits(assignment);
        }
    }

    @Test
    void readersLearnTheirPushPeersBeforeTheirSplits() {
        client.createStream(STREAM, 3, 1024);
        OrderedContext context = new OrderedContext(4);
        NearstreamSourceEnumerator enumerator = unbounded(context);
        enumerator.start();
        // Two TaskManager JVMs on this host: subtasks 0 and 1 in one, 2 and 3 in the other.
        String[] scopes = {"jvm-a", "jvm-a", "jvm-b", "jvm-b"};
        for (int i = 0; i < 4; i++) {
            context.registerReader(i, "localhost");
            enumerator.addReader(i);
        }
        for (int i = 0; i < 3; i++) {
            enumerator.handleSourceEvent(i, new ReaderStartedEvent(scopes[i], Set.of()));
        }
        context.getExecutorService().triggerAll(); // the discovery, not the grace timer
        // Subtask 3 has not started: its scope is unknown, nothing is assigned yet.
        assertThat(context.log).isEmpty();

        enumerator.handleSourceEvent(3, new ReaderStartedEvent(scopes[3], Set.of()));

        // Streamlets 0, 1, 2 go to subtasks 0, 1, 2; each reader learns the split holders of its
        // host and that subtask 0's JVM holds the host's subscription (the readers of jvm-b ask
        // subtask 0 for their rings), and every reader hears of its peers before it gets splits.
        assertThat(streamletsBySubtask(context))
                .containsEntry(0, List.of(0))
                .containsEntry(1, List.of(1))
                .containsEntry(2, List.of(2));
        assertThat(context.log)
                .contains(
                        "peers 0 [0, 1, 2]",
                        "peers 1 [0, 1, 2]",
                        "peers 2 [0, 1, 2] via 0",
                        "peers 3 [0, 1, 2] via 0",
                        "splits 0 x1",
                        "splits 1 x1",
                        "splits 2 x1");
        int lastPeers = 0;
        int firstSplits = Integer.MAX_VALUE;
        for (int i = 0; i < context.log.size(); i++) {
            if (context.log.get(i).startsWith("peers")) {
                lastPeers = i;
            } else {
                firstSplits = Math.min(firstSplits, i);
            }
        }
        assertThat(lastPeers).isLessThan(firstSplits);

        // Nothing changed: nobody is told again.
        context.log.clear();
        enumerator.addSplitsBack(List.of(), 1);
        assertThat(context.log).isEmpty();
    }

    @Test
    void readersThatRestoredSplitsCountAsPeersAndANewAttemptIsToldAgain() {
        client.createStream(STREAM, 1, 1024);
        OrderedContext context = new OrderedContext(2);
        NearstreamSourceEnumerator enumerator = unbounded(context);
        enumerator.start();
        for (int i = 0; i < 2; i++) {
            context.registerReader(i, "localhost");
            enumerator.addReader(i);
        }
        // Subtask 1 restored a split of a streamlet the enumerator will not see as unassigned.
        enumerator.handleSourceEvent(0, new ReaderStartedEvent("jvm", Set.of()));
        enumerator.handleSourceEvent(1, new ReaderStartedEvent("jvm", Set.of(0)));
        context.getExecutorService().triggerAll(); // the discovery, not the grace timer
        assertThat(context.log).startsWith("peers 0 [0, 1]", "peers 1 [0, 1]");

        // Subtask 1 fails over; its new attempt restored nothing this time.
        context.log.clear();
        enumerator.addReader(1);
        enumerator.handleSourceEvent(1, new ReaderStartedEvent("jvm", Set.of()));
        assertThat(context.log).containsExactlyInAnyOrder("peers 0 [0]", "peers 1 [0]");
    }

    @Test
    void eachHostHasItsOwnSubscriptionHolder() {
        client.createStream(STREAM, 4, 1024);
        OrderedContext context = new OrderedContext(4);
        NearstreamSourceEnumerator enumerator = unbounded(context);
        enumerator.start();
        // Host a runs subtasks 1 (jvm-a2) and 3 (jvm-a1); host b runs 0 and 2 in one JVM.
        String[] hosts = {"host-b", "host-a", "host-b", "host-a"};
        String[] scopes = {"jvm-b", "jvm-a2", "jvm-b", "jvm-a1"};
        for (int i = 0; i < 4; i++) {
            context.registerReader(i, hosts[i]);
            enumerator.addReader(i);
            enumerator.handleSourceEvent(i, new ReaderStartedEvent(scopes[i], Set.of()));
        }
        context.getExecutorService().triggerAll();
        assertThat(context.log)
                .contains(
                        "peers 0 [0, 2]",
                        "peers 2 [0, 2]",
                        "peers 1 [1, 3]",
                        "peers 3 [1, 3] via 1");
    }

    @Test
    void ringRequestsAndAnswersAreRelayedBetweenTheReadersOfOneHost() {
        client.createStream(STREAM, 2, 1024);
        OrderedContext context = new OrderedContext(2);
        NearstreamSourceEnumerator enumerator = unbounded(context);
        enumerator.start();
        for (int i = 0; i < 2; i++) {
            context.registerReader(i, "localhost");
            enumerator.addReader(i);
            enumerator.handleSourceEvent(i, new ReaderStartedEvent("jvm-" + i, Set.of()));
        }
        context.getExecutorService().triggerAll();
        assertThat(context.log).contains("peers 1 [0, 1] via 0");
        context.log.clear();

        PushSplitStart split = new PushSplitStart(1, Position.EARLIEST);
        PushRingRequestEvent request = new PushRingRequestEvent(0, 1, 0, List.of(split), false);
        enumerator.handleSourceEvent(1, request);
        Attachment ring = new Attachment(1, 7, 3, "/dev/shm/nearstream-push-1-7", 1);
        PushRingAssignedEvent answer = new PushRingAssignedEvent(0, 1, ring, null);
        enumerator.handleSourceEvent(0, answer);
        assertThat(context.log).containsExactly("0 <- " + request, "1 <- " + answer);

        // The holder's reader is gone: the asking reader hears so instead of waiting.
        context.log.clear();
        context.registeredReaders().remove(0);
        enumerator.handleSourceEvent(1, request);
        assertThat(context.log).hasSize(1);
        assertThat(context.log.get(0))
                .startsWith("1 <- PushRingAssignedEvent[broker=0, subtask=1,");
        assertThat(context.log.get(0)).contains("subtask 0", "is gone");
        // A reader that left needs no answer.
        context.log.clear();
        enumerator.handleSourceEvent(1, new PushRingRequestEvent(0, 1, 0, List.of(), true));
        assertThat(context.log).isEmpty();
    }

    /**
     * After a failover the readers start one by one, each with restored splits, and each is told at
     * once: those of the JVM that starts first hold the host's subscription, and a lower subtask of
     * another JVM starting later is told to ask them, never to hold a second one.
     */
    @Test
    void theHostsHolderStaysWhileItsReaderLives() {
        client.createStream(STREAM, 4, 1024);
        OrderedContext context = new OrderedContext(4);
        NearstreamSourceEnumerator enumerator = unbounded(context);
        enumerator.start();
        String[] scopes = {"jvm-a", "jvm-b", "jvm-a", "jvm-b"};
        for (int i = 0; i < 4; i++) {
            context.registerReader(i, "localhost");
            enumerator.addReader(i);
        }
        enumerator.handleSourceEvent(1, new ReaderStartedEvent(scopes[1], Set.of(0)));
        enumerator.handleSourceEvent(3, new ReaderStartedEvent(scopes[3], Set.of(0)));
        context.getExecutorService().triggerAll(); // the discovery
        // The others are slow to start (a replacement TaskManager): the grace period ends, and
        // the readers that started hear of the holder at once.
        context.getExecutorService().triggerPeriodicScheduledTasks();
        assertThat(context.log).contains("peers 1 [1, 3]", "peers 3 [1, 3]");
        enumerator.handleSourceEvent(0, new ReaderStartedEvent(scopes[0], Set.of(0)));
        enumerator.handleSourceEvent(2, new ReaderStartedEvent(scopes[2], Set.of(0)));

        assertThat(context.log)
                .contains(
                        "peers 0 [0, 1, 2, 3] via 1",
                        "peers 2 [0, 1, 2, 3] via 1",
                        "peers 1 [0, 1, 2, 3]",
                        "peers 3 [0, 1, 2, 3]")
                .noneMatch(line -> line.matches("peers [13] .* via .*"))
                .noneMatch(line -> line.matches("peers [02] .*") && !line.endsWith("via 1"));

        // Subtask 1 fails over: the holder goes with it, and the next word names a live one.
        context.log.clear();
        enumerator.addReader(1);
        enumerator.handleSourceEvent(1, new ReaderStartedEvent("jvm-c", Set.of()));
        assertThat(context.log).contains("peers 3 [0, 2, 3] via 0", "peers 0 [0, 2, 3]");
    }
}
