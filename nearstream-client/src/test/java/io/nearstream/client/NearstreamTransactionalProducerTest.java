package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.FakeNearstreamClient.AppendCall;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The transaction side of {@link NearstreamTransactionalProducer} against a scripted client: which
 * requests it sends in which order, sequences per transaction, retries of retriable failures (which
 * the real broker cannot be made to answer on demand) and what a fatal one does. The broker's
 * transaction rules themselves are tested against the real broker ({@code TransactionsITCase}).
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
}
