package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.testing.NearstreamBrokerExtension;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Transactions end to end against the real broker: what readers see of committed, prepared, aborted
 * and open transactions; fencing; idempotent retries of commit; what TxnInit keeps; and {@link
 * NearstreamTransactionalProducer} over many records and streamlets.
 */
class TransactionsITCase {

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    private static NearstreamClient client() {
        return BROKER.client();
    }

    private static byte[] chunk(String... records) {
        ChunkBuilder b = new ChunkBuilder();
        for (String r : records) {
            b.add(r.getBytes(StandardCharsets.UTF_8));
        }
        return b.build(0, 0, System.currentTimeMillis());
    }

    /** Everything readers see in the stream now. */
    private static List<String> visible(String stream) {
        int streamlets = client().describeStream(stream).join().streamlets();
        List<String> values = new ArrayList<>();
        try (NearstreamPullConsumer consumer =
                NearstreamPullConsumer.builder(client(), stream)
                        .maxWait(Duration.ofMillis(50))
                        .build()) {
            for (int s = 0; s < streamlets; s++) {
                consumer.assign(s, StartingPosition.earliest());
            }
            List<NearstreamRecord> batch;
            while (!(batch = consumer.poll(Duration.ofMillis(300))).isEmpty()) {
                batch.forEach(r -> values.add(new String(r.value(), StandardCharsets.UTF_8)));
            }
        }
        return values;
    }

    private static StatusCode statusOf(Runnable call) {
        try {
            call.run();
        } catch (CompletionException e) {
            return ((NearstreamClientException) e.getCause()).status();
        }
        throw new AssertionError("the call succeeded");
    }

    @Test
    void aCommittedTransactionBecomesVisibleWholeAndOnlyOnCommit() {
        String s = "txn.commit";
        BROKER.createStream(s, 2);
        client().append(s, new int[] {0}, List.of(chunk("plain-before"))).join();
        TxnInitResult init = client().txnInit(s, "w", 0).join();
        assertThat(init.epoch()).isEqualTo(1);
        assertThat(init.lastSerial()).isZero();
        TxnRef ref = client().txnBegin(new TxnRef(s, "w", init.epoch(), 0)).join();
        assertThat(ref.serial()).isEqualTo(1);
        List<AppendResult> results =
                client().txnAppend(ref, new int[] {0, 1}, List.of(chunk("a", "b"), chunk("c")))
                        .join();
        assertThat(results).allMatch(AppendResult::ok);
        assertThat(results).allMatch(r -> r.position().equals(Position.EARLIEST));
        assertThat(visible(s)).containsExactly("plain-before");

        client().txnPrepare(ref).join();
        List<TransactionInfo> listed = client().txnList(s, "").join();
        assertThat(listed).hasSize(1);
        assertThat(listed.get(0).state()).isEqualTo(TransactionInfo.State.PREPARED);
        assertThat(listed.get(0).chunks()).isEqualTo(2);
        assertThat(listed.get(0).streamlets()).isEqualTo(2);
        assertThat(listed.get(0).ref(s)).isEqualTo(ref);
        assertThat(visible(s)).as("prepared is not committed").containsExactly("plain-before");

        client().txnCommit(ref).join();
        assertThat(visible(s)).containsExactlyInAnyOrder("plain-before", "a", "b", "c");
        // A retried commit (the first answer was lost) is OK and shows nothing twice.
        client().txnCommit(ref).join();
        assertThat(visible(s)).hasSize(4);
        assertThat(client().txnList(s, "").join()).isEmpty();
    }

    @Test
    void abortedAndOpenTransactionsAreNeverVisible() {
        String s = "txn.abort";
        BROKER.createStream(s, 1);
        long epoch = client().txnInit(s, "w", 0).join().epoch();
        TxnRef aborted = client().txnBegin(new TxnRef(s, "w", epoch, 0)).join();
        client().txnAppend(aborted, new int[] {0}, List.of(chunk("gone"))).join();
        client().txnAbort(aborted).join();
        client().txnAbort(aborted).join(); // idempotent
        assertThat(statusOf(() -> client().txnCommit(aborted).join()))
                .isEqualTo(StatusCode.TXN_ABORTED);

        TxnRef open = client().txnBegin(new TxnRef(s, "w", epoch, 0)).join();
        assertThat(open.serial()).isEqualTo(aborted.serial() + 1);
        client().txnAppend(open, new int[] {0}, List.of(chunk("pending"))).join();
        client().append(s, new int[] {0}, List.of(chunk("plain"))).join();
        assertThat(visible(s)).containsExactly("plain");
        assertThat(client().txnList(s, "").join())
                .extracting(TransactionInfo::state)
                .containsExactly(TransactionInfo.State.OPEN);
    }

    @Test
    void aNewOwnerFencesTheOldAndKeepsOnlyWhatItAsksFor() {
        String s = "txn.fence";
        BROKER.createStream(s, 1);
        long old = client().txnInit(s, "w", 0).join().epoch();
        TxnRef kept = client().txnBegin(new TxnRef(s, "w", old, 0)).join();
        client().txnAppend(kept, new int[] {0}, List.of(chunk("kept"))).join();
        client().txnPrepare(kept).join();
        TxnRef later = client().txnBegin(new TxnRef(s, "w", old, 0)).join();
        client().txnAppend(later, new int[] {0}, List.of(chunk("after-checkpoint"))).join();
        client().txnPrepare(later).join();
        TxnRef open = client().txnBegin(new TxnRef(s, "w", old, 0)).join();

        TxnInitResult successor = client().txnInit(s, "w", kept.serial()).join();
        assertThat(successor.epoch()).isEqualTo(old + 1);
        assertThat(successor.lastSerial()).isEqualTo(open.serial());
        // The zombie can no longer write or begin.
        assertThat(
                        statusOf(
                                () ->
                                        client().txnAppend(open, new int[] {0}, List.of(chunk("z")))
                                                .join()))
                .isIn(StatusCode.TXN_FENCED, StatusCode.TXN_ABORTED);
        assertThat(statusOf(() -> client().txnBegin(new TxnRef(s, "w", old, 0)).join()))
                .isEqualTo(StatusCode.TXN_FENCED);
        // Kept through its serial: still prepared, and committable with its own (older) epoch.
        assertThat(client().txnList(s, "w").join())
                .extracting(TransactionInfo::serial)
                .containsExactly(kept.serial());
        assertThat(statusOf(() -> client().txnCommit(later).join()))
                .isEqualTo(StatusCode.TXN_ABORTED);
        client().txnCommit(kept).join();
        assertThat(visible(s)).containsExactly("kept");
    }

    @Test
    void theTransactionalProducerWritesEveryRecordOnceAndFencingStopsIt() throws Exception {
        String s = "txn.producer";
        int streamlets = 3;
        BROKER.createStream(
                new StreamConfig(s, streamlets, 128 * 1024, 4, 1, Durability.ASYNC, -1, -1));
        NearstreamProducerConfig config =
                NearstreamProducerConfig.builder(BROKER.address(), s)
                        .batchSizeBytes(8 * 1024)
                        .partitioner(NearstreamPartitioner::keyHash)
                        .build();
        int perTransaction = 10_000;
        BrokerTxnRef prepared;
        try (NearstreamTransactionalProducer producer =
                new NearstreamTransactionalProducer(config, "writer")) {
            producer.initTransactions(0);
            producer.beginTransaction();
            for (int i = 0; i < perTransaction; i++) {
                byte[] v = ("c-" + i).getBytes(StandardCharsets.UTF_8);
                producer.send(v, v);
            }
            producer.commitTransaction();
            producer.beginTransaction();
            for (int i = 0; i < perTransaction; i++) {
                byte[] v = ("p-" + i).getBytes(StandardCharsets.UTF_8);
                producer.send(v, v);
            }
            List<BrokerTxnRef> parts = producer.prepareTransaction();
            assertThat(parts).hasSize(1); // one broker: one part
            prepared = parts.get(0);
            producer.beginTransaction();
            producer.send("never".getBytes(StandardCharsets.UTF_8));
            producer.flush();

            // Another producer takes the id over, keeping what was prepared.
            try (NearstreamTransactionalProducer successor =
                    new NearstreamTransactionalProducer(config, "writer")) {
                successor.initTransactions(prepared.ref().serial());
            }
            producer.send("zombie".getBytes(StandardCharsets.UTF_8));
            assertThatThrownBy(producer::flush)
                    .isInstanceOf(NearstreamClientException.class)
                    .hasMessageContaining("another producer took over transactional id 'writer'");
        }
        // A committer with only the reference commits the prepared transaction, twice.
        NearstreamTransactionalProducer.commit(
                client(), prepared, Duration.ofMillis(50), Duration.ofSeconds(10));
        NearstreamTransactionalProducer.commit(
                client(), prepared, Duration.ofMillis(50), Duration.ofSeconds(10));

        Map<String, Integer> counts = new HashMap<>();
        visible(s).forEach(v -> counts.merge(v, 1, Integer::sum));
        assertThat(counts).hasSize(2 * perTransaction);
        assertThat(counts.values()).allMatch(n -> n == 1);
        assertThat(counts).containsKeys("c-0", "c-9999", "p-0", "p-9999");
    }

    @Test
    void transactionsOfAStreamThatIsGoneOrOfAnUnknownIdAreRefused() {
        assertThat(statusOf(() -> client().txnInit("txn.nope", "w", 0).join()))
                .isEqualTo(StatusCode.STREAM_NOT_FOUND);
        String s = "txn.unknown";
        BROKER.createStream(s, 1);
        assertThat(statusOf(() -> client().txnBegin(new TxnRef(s, "never-init", 1, 0)).join()))
                .isEqualTo(StatusCode.TXN_NOT_FOUND);
        assertThat(statusOf(() -> client().txnInit(s, "bad\nid", 0).join()))
                .isEqualTo(StatusCode.INVALID_ARGUMENT);
    }
}
