package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.FakeNearstreamClient.AppendCall;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The transaction side of {@link NearstreamTransactionalProducer} against a scripted client: which
 * requests it sends in which order, sequences per transaction, retries of retriable failures (which
 * the real broker cannot be made to answer on demand) and what a fatal one does; and, against a
 * {@link FakeCluster}, where a replicated stream's per-streamlet parts go while their leaders
 * change, which a real cluster shows only with seconds of failover. The broker's transaction rules
 * themselves are tested against the real broker ({@code TransactionsITCase}, {@code
 * ReplicatedTransactionsITCase}).
 */
class NearstreamTransactionalProducerTest {

    private static NearstreamTransactionalProducer producer(FakeNearstreamClient client) {
        return new NearstreamTransactionalProducer(
                NearstreamProducerConfig.builder(client, "s")
                        .producerId(42)
                        .linger(Duration.ZERO)
                        .retryBackoff(Duration.ofMillis(1))
                        .build(),
                "t");
    }

    @Test
    void chunksGoToTheOpenTransactionAndSequencesRestartInEach() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(1);
        try (NearstreamTransactionalProducer p = producer(client)) {
            assertThat(p.initTransactions(7)).isEqualTo(1);
            p.beginTransaction();
            p.send(new byte[] {1});
            AppendCall a = client.nextAppend();
            TxnRef first = a.txn; // begun with the first chunk
            assertThat(first.epoch()).isEqualTo(1);
            assertThat(a.header(0).sequence()).isZero();
            assertThat(a.header(0).producerId()).isEqualTo(42);
            a.ok();
            p.send(new byte[] {2});
            AppendCall b = client.nextAppend();
            assertThat(b.header(0).sequence()).isEqualTo(1);
            b.ok();
            BrokerTxnRef part = new BrokerTxnRef(BrokerTxnRef.ONLY_BROKER, first);
            assertThat(p.prepareTransaction()).containsExactly(part);

            p.beginTransaction();
            p.send(new byte[] {3});
            AppendCall c = client.nextAppend();
            TxnRef second = c.txn;
            assertThat(second.serial()).isGreaterThan(first.serial());
            assertThat(c.header(0).sequence()).isZero(); // the transaction's own sequences
            c.ok();
            p.commitTransaction();
            p.commit(part);
            assertThat(client.txnCalls())
                    .containsExactly(
                            "init s/t keep 7",
                            "begin s/t epoch 1 serial 0",
                            "prepare " + first,
                            "begin s/t epoch 1 serial 0",
                            "commit " + second,
                            "commit " + first);
        }
    }

    @Test
    void prepareWaitsForEveryChunkOfTheTransaction() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(2);
        try (NearstreamTransactionalProducer p = producer(client)) {
            p.initTransactions(0);
            p.beginTransaction();
            p.sendTo(0, new byte[] {1});
            AppendCall inFlight = client.nextAppend();
            TxnRef ref = inFlight.txn;
            CompletableFuture<List<BrokerTxnRef>> prepared =
                    CompletableFuture.supplyAsync(p::prepareTransaction);
            Thread.sleep(100);
            assertThat(prepared).isNotDone();
            assertThat(client.txnCalls()).doesNotContain("prepare " + ref);
            inFlight.ok();
            assertThat(prepared.get(5, TimeUnit.SECONDS))
                    .containsExactly(new BrokerTxnRef(BrokerTxnRef.ONLY_BROKER, ref));
        }
    }

    @Test
    void retriableFailuresAreRetriedWithTheSameSequence() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(1);
        try (NearstreamTransactionalProducer p = producer(client)) {
            client.failNextTxnCall(StatusCode.IO_ERROR);
            p.initTransactions(0);
            client.failNextTxnCall(StatusCode.SHUTTING_DOWN);
            p.beginTransaction();
            CompletableFuture<RecordPosition> r = p.send(new byte[] {1});
            AppendCall first = client.nextAppend();
            first.fail(StatusCode.IO_ERROR);
            AppendCall again = client.nextAppend();
            assertThat(again.chunks.get(0)).isEqualTo(first.chunks.get(0));
            again.answer(StatusCode.STORAGE_ERROR);
            client.nextAppend().ok();
            assertThat(r.get(5, TimeUnit.SECONDS).streamlet()).isZero();
            client.failNextTxnCall(StatusCode.STORAGE_ERROR);
            p.prepareTransaction();
            assertThat(p.failure()).isNull();
            assertThat(client.txnCalls().stream().filter(c -> c.startsWith("prepare"))).hasSize(2);
        }
    }

    @Test
    void aRefusedChunkFailsTheProducerWithItsCause() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(1);
        try (NearstreamTransactionalProducer p = producer(client)) {
            p.initTransactions(0);
            p.beginTransaction();
            CompletableFuture<RecordPosition> r = p.send(new byte[] {1});
            client.nextAppend().answer(StatusCode.CHUNK_TOO_LARGE);
            assertThatThrownBy(() -> r.get(5, TimeUnit.SECONDS))
                    .hasMessageContaining("CHUNK_TOO_LARGE");
            assertThatThrownBy(p::prepareTransaction)
                    .isInstanceOf(NearstreamClientException.class)
                    .hasMessageContaining("does not fit in one segment of stream 's'");
            assertThat(client.txnCalls()).noneMatch(c -> c.startsWith("prepare"));
            assertThatThrownBy(() -> p.send(new byte[] {2}))
                    .hasMessageContaining("CHUNK_TOO_LARGE");
            p.abortTransaction(); // still possible: it frees the broker's transaction
            assertThat(client.txnCalls()).last().asString().startsWith("abort");
            assertThatThrownBy(p::beginTransaction).hasMessageContaining("CHUNK_TOO_LARGE");
        }
    }

    @Test
    void fencingFailsTheProducerAndSaysAnotherProducerTookOver() {
        FakeNearstreamClient client = new FakeNearstreamClient(1);
        try (NearstreamTransactionalProducer p = producer(client)) {
            p.initTransactions(0);
            p.beginTransaction();
            client.failNextTxnCall(StatusCode.TXN_FENCED); // the TxnBegin of the first chunk
            CompletableFuture<RecordPosition> r = p.send(new byte[] {1});
            assertThatThrownBy(p::flush)
                    .isInstanceOf(NearstreamClientException.class)
                    .hasMessageContaining("TXN_FENCED")
                    .hasMessageContaining("another producer took over transactional id 't'");
            assertThat(p.failure().status()).isEqualTo(StatusCode.TXN_FENCED);
            assertThatThrownBy(() -> r.get(5, TimeUnit.SECONDS)).hasMessageContaining("TXN_FENCED");
            assertThatThrownBy(() -> p.initTransactions(0)).isSameAs(p.failure());
        }
    }

    @Test
    void abortDropsWhatWasNotSentAndTheNextTransactionStartsClean() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(2);
        try (NearstreamTransactionalProducer p =
                new NearstreamTransactionalProducer(
                        NearstreamProducerConfig.builder(client, "s")
                                .producerId(42)
                                .linger(Duration.ofSeconds(30))
                                .build(),
                        "t")) {
            p.initTransactions(0);
            p.beginTransaction();
            CompletableFuture<RecordPosition> buffered = p.sendTo(0, new byte[] {1});
            p.abortTransaction();
            assertThatThrownBy(buffered::join).hasMessageContaining("TXN_ABORTED");
            assertThat(client.pollAppend(100)).as("nothing of it was sent").isNull();
            assertThat(client.txnCalls())
                    .as("nothing was sent, so no broker transaction was begun or aborted")
                    .containsExactly("init s/t keep 0");
            assertThat(p.failure()).isNull();
            p.beginTransaction();
            p.sendTo(1, new byte[] {2});
            CompletableFuture<Void> flushed = CompletableFuture.runAsync(p::flush);
            AppendCall c = client.nextAppend();
            assertThat(client.txnCalls()).last().isEqualTo("begin s/t epoch 1 serial 0");
            assertThat(c.header(0).sequence()).isZero();
            c.ok();
            flushed.get(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void closeAbortsTheOpenTransaction() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(1);
        NearstreamTransactionalProducer p = producer(client);
        p.initTransactions(0);
        p.beginTransaction();
        p.send(new byte[] {1});
        AppendCall a = client.nextAppend();
        a.ok();
        p.close();
        assertThat(client.txnCalls()).last().isEqualTo("abort " + a.txn);
    }

    @Test
    void misuseIsExplained() {
        FakeNearstreamClient client = new FakeNearstreamClient(1);
        try (NearstreamTransactionalProducer p = producer(client)) {
            assertThatThrownBy(p::beginTransaction).hasMessageContaining("initTransactions");
            p.initTransactions(0);
            assertThatThrownBy(() -> p.send(new byte[] {1}))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("beginTransaction");
            assertThatThrownBy(p::prepareTransaction).hasMessageContaining("no transaction");
        }
        NearstreamProducerConfig noId =
                NearstreamProducerConfig.builder(client, "s").producerId(0).build();
        assertThatThrownBy(() -> new NearstreamTransactionalProducer(noId, "t"))
                .hasMessageContaining("producer id other than 0");
        NearstreamProducerConfig config = NearstreamProducerConfig.builder(client, "s").build();
        assertThatThrownBy(() -> new NearstreamTransactionalProducer(config, ""))
                .hasMessageContaining("1 to 255");
        assertThatThrownBy(() -> new NearstreamTransactionalProducer(config, "a\nb"))
                .hasMessageContaining("control characters");
        assertThatThrownBy(() -> new NearstreamTransactionalProducer(config, "x".repeat(256)))
                .hasMessageContaining("got 256");
    }

    // ---- a replicated stream over a cluster: one part per streamlet, on its leader ----------

    /** Brokers 1 to 3; stream {@code r} has streamlets 0 and 2 led by broker 1, 1 by broker 2. */
    private static FakeCluster replicatedCluster() {
        FakeCluster cluster = new FakeCluster();
        cluster.add(1, "b1:1");
        cluster.add(2, "b2:2");
        cluster.add(3, "b3:3");
        cluster.placeReplicated("r", 1, 1, 2, 1);
        return cluster;
    }

    private static NearstreamClusterClient clusterClient(FakeCluster cluster) {
        return new NearstreamClusterClient(
                "b1:1,b2:2,b3:3", cluster::open, 3, Duration.ofMillis(1), () -> {});
    }

    private static NearstreamTransactionalProducer producer(NearstreamClusterClient client) {
        return new NearstreamTransactionalProducer(
                NearstreamProducerConfig.builder(client, "r")
                        .producerId(42)
                        .linger(Duration.ZERO)
                        .retryBackoff(Duration.ofMillis(5))
                        .deliveryTimeout(Duration.ofSeconds(10))
                        .build(),
                "t");
    }

    @Test
    void aReplicatedStreamsTransactionIsOnePartPerStreamletOnItsLeader() {
        try (FakeCluster cluster = replicatedCluster();
                NearstreamClusterClient client = clusterClient(cluster);
                NearstreamTransactionalProducer p = producer(client)) {
            FakeCluster.Broker b1 = cluster.broker(1);
            FakeCluster.Broker b2 = cluster.broker(2);
            // The fake's epoch is the answering broker's id: each scope was initialised on its
            // leader.
            assertThat(p.initTransactions(Map.of())).isEqualTo(Map.of(0, 1L, 1, 2L, 2, 1L));
            assertThat(p.streamletScopes()).isTrue();
            assertThat(b1.calls("txnInit"))
                    .containsExactly("txnInit r scope 0", "txnInit r scope 2");
            assertThat(b2.calls("txnInit")).containsExactly("txnInit r scope 1");
            assertThat(cluster.broker(3).calls("txn")).isEmpty();

            p.beginTransaction();
            p.sendTo(0, new byte[] {1});
            p.sendTo(2, new byte[] {2});
            List<BrokerTxnRef> parts = p.prepareTransaction();

            // Two streamlets of one broker: two parts, each in its own scope.
            assertThat(parts)
                    .containsExactly(
                            new BrokerTxnRef(1, new TxnRef("r", "t", 1, 1, 0)),
                            new BrokerTxnRef(1, new TxnRef("r", "t", 1, 1, 2)));
            assertThat(parts).extracting(BrokerTxnRef::partKey).containsExactly(0, 2);
            assertThat(b1.calls("txnAppend"))
                    .containsExactlyInAnyOrder(
                            "txnAppend r/t epoch 1 serial 1 scope 0 [0]",
                            "txnAppend r/t epoch 1 serial 1 scope 2 [2]");
            assertThat(b1.calls("txnPrepare"))
                    .containsExactly(
                            "txnPrepare r/t epoch 1 serial 1 scope 0",
                            "txnPrepare r/t epoch 1 serial 1 scope 2");
            assertThat(b2.calls("txnBegin")).as("streamlet 1 was not written").isEmpty();
            assertThat(b2.calls("append")).isEmpty();
        }
    }

    @Test
    void aStreamletPartFollowsItsNewLeaderAfterNotOwner() throws Exception {
        try (FakeCluster cluster = replicatedCluster();
                NearstreamClusterClient client = clusterClient(cluster);
                NearstreamTransactionalProducer p = producer(client)) {
            FakeCluster.Broker b1 = cluster.broker(1);
            FakeCluster.Broker b3 = cluster.broker(3);
            p.initTransactions(Map.of());
            p.beginTransaction();
            p.sendTo(0, new byte[] {1});
            p.flush();

            // Streamlet 0 fails over to broker 3; the client's view still names broker 1, which
            // answers NOT_OWNER naming broker 3.
            cluster.placeReplicated("r", 2, 3, 2, 1);
            p.sendTo(0, new byte[] {2});
            p.flush();
            assertThat(b3.calls("txnAppend"))
                    .containsExactly("txnAppend r/t epoch 1 serial 1 scope 0 [0]");
            List<BrokerTxnRef> parts = p.prepareTransaction();
            assertThat(parts).containsExactly(new BrokerTxnRef(3, new TxnRef("r", "t", 1, 1, 0)));
            assertThat(b3.calls("txnPrepare")).hasSize(1);

            // Once more, for a committer that knows only the reference: the leader moves back.
            cluster.placeReplicated("r", 3, 1, 2, 1);
            NearstreamTransactionalProducer.commit(
                    client, parts.get(0), Duration.ofMillis(5), Duration.ofSeconds(10));
            assertThat(b3.calls("txnCommit")).as("refused: NOT_OWNER").hasSize(1);
            assertThat(b1.calls("txnCommit"))
                    .containsExactly("txnCommit r/t epoch 1 serial 1 scope 0");
        }
    }

    @Test
    void aStreamletPartWaitsOutAFailoverWithinTheDeliveryTimeout() throws Exception {
        try (FakeCluster cluster = replicatedCluster();
                NearstreamClusterClient client = clusterClient(cluster);
                NearstreamTransactionalProducer p = producer(client)) {
            p.initTransactions(Map.of());
            p.beginTransaction();
            p.sendTo(1, new byte[] {1});
            List<BrokerTxnRef> parts = p.prepareTransaction();
            assertThat(parts).containsExactly(new BrokerTxnRef(2, new TxnRef("r", "t", 2, 1, 1)));

            // The leader dies: refused connections, then BROKER_UNAVAILABLE once its session
            // ends, for longer than the cluster client's own rounds; then broker 3 leads.
            FakeCluster.Broker b2 = cluster.broker(2);
            b2.down = true;
            CompletableFuture<Void> commit =
                    CompletableFuture.runAsync(
                            () ->
                                    NearstreamTransactionalProducer.commit(
                                            client,
                                            parts.get(0),
                                            Duration.ofMillis(5),
                                            Duration.ofSeconds(10)));
            Thread.sleep(100);
            cluster.unregister(2);
            Thread.sleep(100);
            assertThat(commit).isNotDone();
            cluster.placeReplicated("r", 2, 1, 3, 1);
            commit.get(10, TimeUnit.SECONDS);
            assertThat(cluster.broker(3).calls("txnCommit"))
                    .containsExactly("txnCommit r/t epoch 2 serial 1 scope 1");
            assertThat(b2.calls("txnCommit")).isNotEmpty();
        }
    }

    @Test
    void aStreamWithoutReplicationKeepsOneBrokerPart() {
        try (FakeCluster cluster = new FakeCluster()) {
            cluster.add(1, "b1:1");
            cluster.add(2, "b2:2");
            cluster.place("one", 1, 2, 2);
            try (NearstreamClusterClient client =
                            new NearstreamClusterClient(
                                    "b1:1,b2:2", cluster::open, 3, Duration.ofMillis(1), () -> {});
                    NearstreamTransactionalProducer p =
                            new NearstreamTransactionalProducer(
                                    NearstreamProducerConfig.builder(client, "one")
                                            .producerId(42)
                                            .linger(Duration.ZERO)
                                            .build(),
                                    "t")) {
                assertThat(p.initTransactions(Map.of())).isEqualTo(Map.of(2, 2L));
                assertThat(p.streamletScopes()).isFalse();
                p.beginTransaction();
                p.sendTo(0, new byte[] {1});
                p.sendTo(1, new byte[] {2});
                assertThat(p.prepareTransaction())
                        .containsExactly(new BrokerTxnRef(2, new TxnRef("one", "t", 2, 1)));
                assertThat(cluster.broker(2).calls("txn"))
                        .containsExactly(
                                "txnInit one",
                                "txnBegin one/t epoch 2 serial 0",
                                "txnPrepare one/t epoch 2 serial 1");
            }
        }
    }
}
