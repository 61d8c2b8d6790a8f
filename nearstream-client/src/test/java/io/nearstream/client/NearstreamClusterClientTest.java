package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The routing of {@link NearstreamClusterClient} against a {@link FakeCluster} of two brokers,
 * where stream {@code s} has streamlets 0 and 2 on broker 1 and 1 and 3 on broker 2.
 */
class NearstreamClusterClientTest {

    private static final String B1 = "broker1:7421";
    private static final String B2 = "broker2:7422";

    private FakeCluster cluster;
    private FakeCluster.Broker broker1;
    private FakeCluster.Broker broker2;
    private NearstreamClusterClient client;

    @BeforeEach
    void setUp() {
        cluster = new FakeCluster();
        broker1 = cluster.add(1, B1);
        broker2 = cluster.add(2, B2);
        cluster.place("s", 1, 1, 2, 1, 2);
        client = client(B1 + "," + B2);
    }

    @AfterEach
    void tearDown() {
        client.close();
        cluster.close();
    }

    private NearstreamClusterClient client(String bootstrap) {
        return new NearstreamClusterClient(
                bootstrap, cluster::open, 3, Duration.ofMillis(1), () -> {});
    }

    private static byte[] chunk(String record) {
        return new ChunkBuilder()
                .add(record.getBytes(StandardCharsets.UTF_8))
                .build(0, 0, 1_700_000_000_000L);
    }

    private static List<byte[]> chunks(int n) {
        List<byte[]> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(chunk("record-" + i));
        }
        return out;
    }

    private static <T> T get(CompletableFuture<T> f) throws Exception {
        return f.get(10, TimeUnit.SECONDS);
    }

    private static NearstreamClientException failure(CompletableFuture<?> f) throws Exception {
        try {
            f.get(10, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            while (!(cause instanceof NearstreamClientException) && cause.getCause() != null) {
                cause = cause.getCause();
            }
            assertThat(cause).isInstanceOf(NearstreamClientException.class);
            return (NearstreamClientException) cause;
        }
        throw new AssertionError("expected a failure, got " + f.join());
    }

    private static List<Integer> streamlets(List<AppendResult> results) {
        List<Integer> out = new ArrayList<>();
        results.forEach(r -> out.add(r.streamlet()));
        return out;
    }

    @Test
    void appendGoesAsOneRequestPerOwnerAndMergesInRequestOrder() throws Exception {
        List<AppendResult> results = get(client.append("s", new int[] {0, 1, 2, 3}, chunks(4)));

        assertThat(broker1.calls("append")).containsExactly("append s [0, 2]");
        assertThat(broker2.calls("append")).containsExactly("append s [1, 3]");
        assertThat(streamlets(results)).containsExactly(0, 1, 2, 3);
        assertThat(results).allMatch(AppendResult::ok);
        // Each result is its owner's: the fake puts the broker id in the position's group.
        assertThat(results).extracting(r -> r.position().group()).containsExactly(1L, 2L, 1L, 2L);
    }

    @Test
    void aNotOwnerAnswerRefreshesOnceAndResendsToTheNewOwner() throws Exception {
        get(client.clusterMetadata("s"));
        // Streamlet 2 moved to broker 2 behind the client's back.
        cluster.place("s", 2, 1, 2, 2, 2);
        int refreshesBefore =
                broker1.calls("clusterMetadata").size() + broker2.calls("clusterMetadata").size();

        List<AppendResult> results = get(client.append("s", new int[] {0, 1, 2, 3}, chunks(4)));

        assertThat(results).allMatch(AppendResult::ok);
        assertThat(streamlets(results)).containsExactly(0, 1, 2, 3);
        assertThat(results).extracting(r -> r.position().group()).containsExactly(1L, 2L, 2L, 2L);
        assertThat(broker1.calls("append")).containsExactly("append s [0, 2]");
        assertThat(broker2.calls("append")).containsExactly("append s [1, 3]", "append s [2]");
        int refreshes =
                broker1.calls("clusterMetadata").size() + broker2.calls("clusterMetadata").size();
        assertThat(refreshes - refreshesBefore).isEqualTo(1);
    }

    @Test
    void anUnregisteredOwnerGivesBrokerUnavailableNamingItWithoutSending() throws Exception {
        cluster.place("s", 1, 1, 2, 1, 3);

        List<AppendResult> results = get(client.append("s", new int[] {0, 1, 2, 3}, chunks(4)));

        assertThat(results.subList(0, 3)).allMatch(AppendResult::ok);
        AppendResult refused = results.get(3);
        assertThat(refused.streamlet()).isEqualTo(3);
        assertThat(refused.status()).isEqualTo(StatusCode.BROKER_UNAVAILABLE);
        assertThat(refused.message()).isEqualTo("broker 3 is not registered");
        assertThat(broker1.calls("append")).containsExactly("append s [0, 2]");
        assertThat(broker2.calls("append")).containsExactly("append s [1]");
    }

    @Test
    void refusalsThatOutlastTheRetriesNameTheBroker() throws Exception {
        // The cluster says broker 2 stores streamlet 1; broker 2 keeps saying broker 1 does.
        broker2.disowned.add(1);

        List<AppendResult> results = get(client.append("s", new int[] {1, 2}, chunks(2)));

        assertThat(results.get(1).ok()).isTrue();
        AppendResult refused = results.get(0);
        assertThat(refused.status()).isEqualTo(StatusCode.NOT_OWNER);
        assertThat(refused.message())
                .isEqualTo(
                        "broker 2 at "
                                + B2
                                + ": streamlet 1 of stream 's' is stored by broker 1 at "
                                + B1);
        assertThat(broker2.calls("append"))
                .containsExactly("append s [1]", "append s [1]", "append s [1]");
    }

    @Test
    void aPushSubscriptionOverTwoBrokersIsRefused() throws Exception {
        List<PushRingSpec> rings =
                List.of(
                        new PushRingSpec(0, List.of(new PushSplitStart(0, Position.EARLIEST))),
                        new PushRingSpec(1, List.of(new PushSplitStart(1, Position.EARLIEST))));

        NearstreamClientException e = failure(client.pushSubscribe("s", 8, 1 << 20, 5000, rings));

        assertThat(e.status()).isEqualTo(StatusCode.INVALID_ARGUMENT);
        assertThat(e.getMessage())
                .contains("per broker")
                .contains("broker 1 at " + B1 + " (streamlets 0)")
                .contains("broker 2 at " + B2 + " (streamlets 1)");
        assertThat(broker1.calls("push")).isEmpty();
        assertThat(broker2.calls("push")).isEmpty();
    }

    @Test
    void aPushSubscriptionTakesItsOptionsToTheLeaderButNoReplicaRead() throws Exception {
        List<PushRingSpec> rings =
                List.of(new PushRingSpec(0, List.of(new PushSplitStart(1, Position.EARLIEST))));
        PushSubscribeOptions options =
                PushSubscribeOptions.of(8, 1 << 20, 5000)
                        .withFilter(RecordFilter.jsonFieldIn("event_type", "view"))
                        .withSlotFormat(SlotFormat.BINARY_VIEW);

        get(client.pushSubscribe("s", rings, options));
        NearstreamClientException e =
                failure(client.pushSubscribe("s", rings, options.withReplicaRead(true)));

        assertThat(broker2.calls("push"))
                .containsExactly(
                        "pushSubscribe s [1] filter "
                                + options.filter().toSpec()
                                + " format binary-view");
        assertThat(e.status()).isEqualTo(StatusCode.INVALID_ARGUMENT);
        assertThat(e.getMessage()).contains("replica read");
        assertThat(broker1.calls("push")).isEmpty();
    }

    @Test
    void aPushSubscriptionStaysWithItsBroker() throws Exception {
        List<PushRingSpec> rings =
                List.of(
                        new PushRingSpec(
                                0,
                                List.of(
                                        new PushSplitStart(1, Position.EARLIEST),
                                        new PushSplitStart(3, Position.EARLIEST))));

        PushSubscription sub = get(client.pushSubscribe("s", 8, 1 << 20, 5000, rings));
        get(client.pushUpdate(sub.subscriptionId(), rings));
        get(client.pushClose(sub.subscriptionId()));

        assertThat(sub.brokerEpoch()).isEqualTo(2); // the fake's epoch is its id
        assertThat(broker2.calls("push"))
                .containsExactly(
                        "pushSubscribe s [1, 3]",
                        "pushUpdate " + sub.subscriptionId(),
                        "pushClose " + sub.subscriptionId());
        assertThat(broker1.calls("push")).isEmpty();

        PushSubscription other = get(client.pushSubscribe("s", 8, 1 << 20, 5000, rings));
        List<PushRingSpec> moved =
                List.of(new PushRingSpec(0, List.of(new PushSplitStart(0, Position.EARLIEST))));
        NearstreamClientException e = failure(client.pushUpdate(other.subscriptionId(), moved));
        assertThat(e.status()).isEqualTo(StatusCode.INVALID_ARGUMENT);
        assertThat(e.getMessage()).contains("broker 1 at " + B1);
    }

    @Test
    void fetchMergesTheBrokersAnswersAndClosesThemAll() throws Exception {
        get(client.append("s", new int[] {0, 1, 2, 3}, chunks(4)));
        List<FetchEntry> entries = new ArrayList<>();
        for (int s = 0; s < 4; s++) {
            entries.add(new FetchEntry(s, Position.EARLIEST, 1 << 20));
        }

        try (FetchResponse r = get(client.fetch("s", 0, entries))) {
            assertThat(r.results())
                    .extracting(StreamletFetch::streamlet)
                    .containsExactly(0, 1, 2, 3);
            for (StreamletFetch f : r.results()) {
                assertThat(f.ok()).isTrue();
                assertThat(f.blocks()).hasSize(1);
                ChunkCursor cursor = new ChunkCursor(f.blocks().get(0));
                assertThat(cursor.nextChunk()).isTrue();
                assertThat(cursor.nextRecord()).isTrue();
                assertThat(new String(cursor.copyRecord(), StandardCharsets.UTF_8))
                        .isEqualTo("record-" + f.streamlet());
            }
            assertThat(broker1.calls("fetch")).containsExactly("fetch s wait 0 [0, 2]");
            assertThat(broker2.calls("fetch")).containsExactly("fetch s wait 0 [1, 3]");
            assertThat(cluster.openResponses()).isEqualTo(2);
        }
        assertThat(cluster.openResponses()).isZero();
    }

    @Test
    void aLongPollOverTwoBrokersEndsWithTheFirstData() throws Exception {
        get(client.clusterMetadata("s"));
        List<FetchEntry> entries = new ArrayList<>();
        for (int s = 0; s < 4; s++) {
            entries.add(new FetchEntry(s, Position.EARLIEST, 1 << 20));
        }

        long start = System.nanoTime();
        CompletableFuture<FetchResponse> poll = client.fetch("s", 30_000, entries);
        // Both brokers were asked at once, found nothing, and now wait.
        while (broker1.calls("fetch s wait 30000").isEmpty()
                || broker2.calls("fetch s wait 30000").isEmpty()) {
            Thread.sleep(5);
        }
        assertThat(poll).isNotDone();
        get(client.append("s", new int[] {3}, chunks(1)));

        try (FetchResponse r = get(poll)) {
            assertThat(System.nanoTime() - start).isLessThan(TimeUnit.SECONDS.toNanos(10));
            assertThat(r.results())
                    .extracting(StreamletFetch::streamlet)
                    .containsExactly(0, 1, 2, 3);
            assertThat(r.results().get(3).blocks()).hasSize(1);
            assertThat(r.results().get(0).blocks()).isEmpty();
            assertThat(r.results().get(0).ok()).isTrue();
        }
        assertThat(broker1.calls("fetch"))
                .containsExactly("fetch s wait 0 [0, 2]", "fetch s wait 30000 [0, 2]");
    }

    @Test
    void readsWhoseBrokerIsDownAreRetriedAndThenNameTheBroker() throws Exception {
        get(client.clusterMetadata("s"));
        broker1.down = true;
        Map<Integer, Long> times = new LinkedHashMap<>();
        for (int s = 0; s < 4; s++) {
            times.put(s, 1L);
        }

        List<TimestampLookup> results = get(client.lookupTimestamps("s", times));

        assertThat(results).extracting(TimestampLookup::streamlet).containsExactly(0, 1, 2, 3);
        assertThat(results.get(1).status()).isEqualTo(StatusCode.OK);
        assertThat(results.get(0).status()).isEqualTo(StatusCode.IO_ERROR);
        assertThat(results.get(0).message()).startsWith("broker 1 at " + B1 + ": ");
        assertThat(broker1.calls("lookup")).hasSize(3); // the first send and two resends
        // The view was refreshed from broker 2, the one that answers.
        assertThat(broker2.calls("clusterMetadata").size()).isGreaterThanOrEqualTo(2);
    }

    @Test
    void appendsWhoseConnectionFailedAreNotSentAgain() throws Exception {
        broker1.down = true;

        List<AppendResult> results = get(client.append("s", new int[] {0, 1, 2, 3}, chunks(4)));

        assertThat(results)
                .extracting(AppendResult::status)
                .containsExactly(
                        StatusCode.IO_ERROR, StatusCode.OK, StatusCode.IO_ERROR, StatusCode.OK);
        assertThat(results.get(0).message()).startsWith("broker 1 at " + B1 + ": ");
        assertThat(broker1.calls("append")).hasSize(1);
    }

    @Test
    void metadataOfAllStreamletsAsksEachOwnerForItsOwn() throws Exception {
        List<StreamletMetadata> md = get(client.metadata("s"));

        assertThat(md).extracting(StreamletMetadata::streamlet).containsExactly(0, 1, 2, 3);
        assertThat(md).extracting(m -> m.tail().offset()).containsExactly(1000, 2001, 1002, 2003);
        assertThat(broker1.calls("metadata")).containsExactly("metadata s [0, 2]");
        assertThat(broker2.calls("metadata")).containsExactly("metadata s [1, 3]");
    }

    @Test
    void aTransactionRequestNamingNoBrokerGoesToTheStreamsOneBroker() throws Exception {
        cluster.place("one", 1, 2, 2);

        TxnInitResult init = get(client.txnInit("one", "t", 0));
        assertThat(init.epoch()).isEqualTo(2); // the fake's epoch is its id
        assertThat(broker2.calls("txnInit")).containsExactly("txnInit one");

        NearstreamClientException e = failure(client.txnInit("s", "t", 0));
        assertThat(e.status()).isEqualTo(StatusCode.INVALID_ARGUMENT);
        assertThat(e.getMessage())
                .contains("a transaction request that names no broker needs a stream stored by one")
                .contains("broker 1 at " + B1)
                .contains("broker 2 at " + B2);
        assertThat(broker1.calls("txn")).isEmpty();
    }

    @Test
    void aStreamletScopedRequestGoesToTheStreamletsLeaderAndFollowsIt() throws Exception {
        cluster.placeReplicated("r", 1, 1, 2);

        assertThat(get(client.txnInit("r", "t", 0, 1)).epoch()).isEqualTo(2);
        assertThat(broker2.calls("txnInit")).containsExactly("txnInit r scope 1");
        TxnRef ref = new TxnRef("r", "t", 1, 5, 0);
        get(client.txnPrepare(ref));
        assertThat(broker1.calls("txnPrepare")).containsExactly("txnPrepare " + ref);

        // Streamlet 0 failed over to broker 2: broker 1 answers NOT_OWNER naming it.
        cluster.placeReplicated("r", 2, 2, 2);
        get(client.txnCommit(ref));
        assertThat(broker1.calls("txnCommit")).containsExactly("txnCommit " + ref);
        assertThat(broker2.calls("txnCommit")).containsExactly("txnCommit " + ref);

        // The broker scope still goes to the stream's one broker, which refuses it.
        NearstreamClientException e = failure(client.txnInit("r", "t", 0));
        assertThat(e.status()).isEqualTo(StatusCode.INVALID_ARGUMENT);
        assertThat(broker2.calls("txnInit")).last().isEqualTo("txnInit r");
    }

    @Test
    void everyScopeOfAReplicatedStreamIsListedFromEachStreamletsLeader() throws Exception {
        cluster.placeReplicated("r", 1, 1, 2);

        assertThat(get(client.txnList("r", "job-"))).isEmpty();
        assertThat(broker1.calls("txnList")).containsExactly("txnList r scope 0");
        assertThat(broker2.calls("txnList")).containsExactly("txnList r scope 1");

        // One streamlet's scope: its leader alone.
        get(client.txnList("r", "job-", 1));
        assertThat(broker1.calls("txnList")).hasSize(1);
        assertThat(broker2.calls("txnList"))
                .containsExactly("txnList r scope 1", "txnList r scope 1");
    }

    @Test
    void anUnknownStreamIsLookedUpAndThenNotFound() throws Exception {
        NearstreamClientException e = failure(client.append("nope", new int[] {0}, chunks(1)));

        assertThat(e.status()).isEqualTo(StatusCode.STREAM_NOT_FOUND);
        assertThat(broker1.calls("clusterMetadata")).contains("clusterMetadata [nope]");
    }

    @Test
    void aClusterNoBrokerOfWhichAnswersIsAnIoErrorNotAMissingStream() throws Exception {
        broker1.down = true;
        broker2.down = true;

        NearstreamClientException e = failure(client.append("s", new int[] {0}, chunks(1)));

        assertThat(e.status()).isEqualTo(StatusCode.IO_ERROR);
        assertThat(e.getMessage()).contains(B1).contains(B2);
    }

    @Test
    void createStreamRefreshesTheViewSoTheNextAppendIsRouted() throws Exception {
        get(client.createStream(StreamConfig.of("fresh", 2)));
        List<AppendResult> results = get(client.append("fresh", new int[] {0, 1}, chunks(2)));

        assertThat(results).allMatch(AppendResult::ok);
        assertThat(broker1.calls("append")).containsExactly("append fresh [0]");
        assertThat(broker2.calls("append")).containsExactly("append fresh [1]");
    }

    @Test
    void anUnreachableBootstrapBrokerIsSkipped() throws Exception {
        try (NearstreamClusterClient c = client("dead:1," + B2)) {
            ClusterMetadata m = get(c.clusterMetadata());

            assertThat(c.address()).isEqualTo("dead:1," + B2);
            assertThat(m.brokerId()).isEqualTo(2);
            assertThat(m.brokers()).extracting(BrokerInfo::id).containsExactly(1, 2);
            assertThat(m.placement("s"))
                    .get()
                    .extracting(StreamPlacement::owners)
                    .isEqualTo(List.of(1, 2, 1, 2));
            assertThat(get(c.listStreams())).containsExactly("s");
            assertThat(broker2.calls("list")).hasSize(1);
        }
    }

    @Test
    void aStandaloneBrokerIsAClusterOfOne() throws Exception {
        FakeNearstreamClient standalone = new FakeNearstreamClient(2);
        try (NearstreamClusterClient c =
                new NearstreamClusterClient(
                        standalone.address(), a -> standalone, 3, Duration.ofMillis(1), () -> {})) {
            CompletableFuture<List<AppendResult>> f = c.append("solo", new int[] {0, 1}, chunks(2));
            FakeNearstreamClient.AppendCall call = standalone.nextAppend();
            assertThat(call.streamlets).containsExactly(0, 1);
            call.ok();
            assertThat(get(f)).allMatch(AppendResult::ok);
        }
        assertThat(standalone.closed).isTrue();
    }

    @Test
    void connectFailsNamingTheBootstrapListWhenNoBrokerAnswers() {
        assertThatThrownBy(() -> NearstreamClient.connect("127.0.0.1:1,127.0.0.1:2"))
                .isInstanceOf(NearstreamClientException.class)
                .hasMessageContaining("127.0.0.1:1,127.0.0.1:2")
                .satisfies(
                        e ->
                                assertThat(((NearstreamClientException) e).status())
                                        .isEqualTo(StatusCode.IO_ERROR));
    }

    @Test
    void bootstrapEntriesMustBeHostAndPort() {
        assertThatThrownBy(() -> NearstreamClusterClient.parseBootstrap("a:1,nope"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("nope");
        assertThat(NearstreamClusterClient.parseBootstrap(" a:1 , [::1]:2 ,"))
                .containsExactly("a:1", "[::1]:2");
    }
}
