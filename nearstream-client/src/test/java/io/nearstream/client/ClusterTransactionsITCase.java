package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.testing.NearstreamClusterExtension;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link NearstreamTransactionalProducer} over a cluster of three real brokers and a real ZooKeeper
 * on 127.0.0.1 (docs/protocol.md, "Transactions" and "Cluster"). Transactions are per broker, so a
 * transaction over a stream whose streamlets are spread over the brokers is one broker transaction
 * on each broker it writes to: these tests check that the producer hands back one part per broker,
 * that each broker holds (and commits, or aborts) only its own part, that a successor keeps exactly
 * the prepared parts it names on each broker, and that a plain commit reaches every broker.
 *
 * <p>Real brokers, not fakes, because what is checked is what the brokers store and show readers:
 * the per-broker epochs and serials, TxnInit's aborts, and the visibility of committed parts.
 */
class ClusterTransactionsITCase {

    private static final int STREAMLETS = 6;
    private static final Duration BACKOFF = Duration.ofMillis(50);
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    @RegisterExtension
    static final NearstreamClusterExtension CLUSTER =
            new NearstreamClusterExtension(List.of("host-a", "host-a", "host-a"));

    /**
     * Creates {@code stream} with six streamlets and returns the owner of each; round-robin
     * placement gives every broker two, which is what makes a transaction over the stream span all
     * three.
     */
    private static List<Integer> createStream(String stream) throws Exception {
        try (NearstreamClient client = NearstreamClient.connect(CLUSTER.bootstrap())) {
            client.createStream(StreamConfig.of(stream, STREAMLETS)).get(10, TimeUnit.SECONDS);
            List<Integer> owners =
                    client.clusterMetadata(stream)
                            .get(10, TimeUnit.SECONDS)
                            .placement(stream)
                            .orElseThrow()
                            .owners();
            assertThat(owners).hasSize(STREAMLETS);
            assertThat(
                            owners.stream()
                                    .collect(Collectors.groupingBy(o -> o, Collectors.counting())))
                    .containsOnly(
                            Map.entry(CLUSTER.brokerId(0), 2L),
                            Map.entry(CLUSTER.brokerId(1), 2L),
                            Map.entry(CLUSTER.brokerId(2), 2L));
            return owners;
        }
    }

    private static NearstreamProducerConfig config(String stream) {
        return NearstreamProducerConfig.builder(CLUSTER.bootstrap(), stream)
                .linger(Duration.ofMillis(2))
                .partitioner(NearstreamPartitioner::keyHash)
                .build();
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Everything readers see in the stream now, read through the cluster. */
    private static List<NearstreamRecord> visible(String stream) {
        List<NearstreamRecord> records = new ArrayList<>();
        try (NearstreamPullConsumer consumer =
                NearstreamPullConsumer.builder(CLUSTER.bootstrap(), stream)
                        .maxWait(Duration.ofMillis(50))
                        .build()) {
            for (int s = 0; s < STREAMLETS; s++) {
                consumer.assign(s, StartingPosition.earliest());
            }
            // A poll ends early with records only; a whole second without any means none are left,
            // even on a busy machine where the first poll also finds the brokers.
            List<NearstreamRecord> batch;
            while (!(batch = consumer.poll(Duration.ofSeconds(1))).isEmpty()) {
                records.addAll(batch);
            }
        }
        return records;
    }

    private static List<String> values(List<NearstreamRecord> records) {
        return records.stream()
                .map(r -> new String(r.value(), StandardCharsets.UTF_8))
                .collect(Collectors.toList());
    }

    /**
     * What each broker itself lists, by broker id: asked of each broker directly, so a transaction
     * that landed on the wrong broker (or on one broker only) shows.
     */
    private static Map<Integer, List<TransactionInfo>> listedByBroker(String stream)
            throws Exception {
        Map<Integer, List<TransactionInfo>> listed = new TreeMap<>();
        for (int i = 0; i < CLUSTER.size(); i++) {
            listed.put(
                    CLUSTER.brokerId(i),
                    CLUSTER.broker(i).client().txnList(stream, "").get(10, TimeUnit.SECONDS));
        }
        return listed;
    }

    private static List<Integer> allBrokerIds() {
        List<Integer> ids = new ArrayList<>();
        for (int i = 0; i < CLUSTER.size(); i++) {
            ids.add(CLUSTER.brokerId(i));
        }
        return ids;
    }

    /**
     * Sends {@code count} distinct keyed records and returns the streamlet each went to, as the
     * producer's own partitioner picks it (deterministic for a key).
     */
    private static Map<String, Integer> sendKeyed(
            NearstreamTransactionalProducer producer,
            NearstreamProducerConfig config,
            String prefix,
            int count) {
        NearstreamPartitioner partitioner = config.newPartitioner();
        Map<String, Integer> sent = new HashMap<>();
        for (int i = 0; i < count; i++) {
            String v = prefix + i;
            byte[] b = bytes(v);
            producer.send(b, b);
            sent.put(v, partitioner.streamlet(b, b, STREAMLETS));
        }
        // The test only means something if the records reached every broker.
        assertThat(new HashSet<>(sent.values())).hasSize(STREAMLETS);
        return sent;
    }

    private static Set<String> sentToBrokers(
            Map<String, Integer> sent, List<Integer> owners, Set<Integer> brokers) {
        return sent.entrySet().stream()
                .filter(e -> brokers.contains(owners.get(e.getValue())))
                .map(Map.Entry::getKey)
                .collect(Collectors.toSet());
    }

    @Test
    void aTransactionOverThreeBrokersIsOnePartPerBrokerAndInvisibleUntilCommitted()
            throws Exception {
        String stream = "ctxn.parts";
        List<Integer> owners = createStream(stream);
        NearstreamProducerConfig config = config(stream);
        try (NearstreamTransactionalProducer producer =
                new NearstreamTransactionalProducer(config, "w")) {
            Map<Integer, Long> epochs = producer.initTransactions(Map.of());
            assertThat(epochs.keySet()).containsExactlyElementsOf(allBrokerIds());
            assertThat(producer.epochs()).isEqualTo(epochs);

            producer.beginTransaction();
            Map<String, Integer> sent = sendKeyed(producer, config, "r-", 3000);
            List<BrokerTxnRef> parts = producer.prepareTransaction();
            assertThat(producer.inTransaction()).isFalse();

            assertThat(parts)
                    .extracting(BrokerTxnRef::broker)
                    .containsExactlyElementsOf(allBrokerIds());
            for (BrokerTxnRef part : parts) {
                assertThat(part.ref().stream()).isEqualTo(stream);
                assertThat(part.ref().transactionalId()).isEqualTo("w");
                assertThat(part.ref().epoch()).isEqualTo(producer.epochs().get(part.broker()));
            }
            assertThat(visible(stream)).as("prepared parts are not committed").isEmpty();

            // Each broker holds exactly its own part, prepared, and nothing of the others'.
            Map<Integer, List<TransactionInfo>> listed = listedByBroker(stream);
            for (BrokerTxnRef part : parts) {
                List<TransactionInfo> mine = listed.get(part.broker());
                assertThat(mine).as("transactions on broker %d", part.broker()).hasSize(1);
                assertThat(mine.get(0).state()).isEqualTo(TransactionInfo.State.PREPARED);
                assertThat(mine.get(0).ref(stream)).isEqualTo(part.ref());
                assertThat(mine.get(0).streamlets()).isEqualTo(2);
            }
            assertThat(producer.listTransactions("")).hasSize(3);

            // One broker's commit shows exactly the records of that broker's streamlets.
            BrokerTxnRef middle = parts.get(1);
            producer.commit(middle);
            List<NearstreamRecord> partial = visible(stream);
            assertThat(partial)
                    .allSatisfy(
                            r -> assertThat(owners.get(r.streamlet())).isEqualTo(middle.broker()));
            assertThat(values(partial))
                    .doesNotHaveDuplicates()
                    .containsExactlyInAnyOrderElementsOf(
                            sentToBrokers(sent, owners, Set.of(middle.broker())));

            // A retried commit (its answer lost) shows nothing twice.
            producer.commit(middle);
            producer.commit(parts.get(0));
            producer.commit(parts.get(2));
            List<NearstreamRecord> all = visible(stream);
            assertThat(values(all))
                    .doesNotHaveDuplicates()
                    .containsExactlyInAnyOrderElementsOf(sent.keySet());
            assertThat(all)
                    .allSatisfy(
                            r ->
                                    assertThat(r.streamlet())
                                            .isEqualTo(
                                                    sent.get(
                                                            new String(
                                                                    r.value(),
                                                                    StandardCharsets.UTF_8))));
            assertThat(listedByBroker(stream)).allSatisfy((b, l) -> assertThat(l).isEmpty());
        }
    }

    @Test
    void aTransactionTouchingOneBrokerHasOnePart() throws Exception {
        String stream = "ctxn.one";
        List<Integer> owners = createStream(stream);
        int owner = owners.get(0);
        try (NearstreamTransactionalProducer producer =
                new NearstreamTransactionalProducer(config(stream), "w")) {
            producer.initTransactions(0L);
            assertThat(producer.epochs().keySet()).containsExactlyElementsOf(allBrokerIds());
            producer.beginTransaction();
            List<String> sent = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                sent.add("only-" + i);
                producer.sendTo(0, bytes("only-" + i));
            }
            producer.flush();
            // A broker's part begins with its first chunk: the others never see a TxnBegin.
            Map<Integer, List<TransactionInfo>> open = listedByBroker(stream);
            assertThat(open.get(owner))
                    .extracting(TransactionInfo::state)
                    .containsExactly(TransactionInfo.State.OPEN);
            assertThat(open).allSatisfy((b, l) -> assertThat(l).hasSize(b == owner ? 1 : 0));

            List<BrokerTxnRef> parts = producer.prepareTransaction();
            assertThat(parts).hasSize(1);
            assertThat(parts.get(0).broker()).isEqualTo(owner);
            assertThat(parts.get(0).ref().epoch()).isEqualTo(producer.epochs().get(owner));
            Map<Integer, List<TransactionInfo>> prepared = listedByBroker(stream);
            assertThat(prepared.get(owner))
                    .extracting(TransactionInfo::state)
                    .containsExactly(TransactionInfo.State.PREPARED);
            assertThat(prepared).allSatisfy((b, l) -> assertThat(l).hasSize(b == owner ? 1 : 0));
            assertThat(visible(stream)).isEmpty();

            producer.commit(parts.get(0));
            List<NearstreamRecord> read = visible(stream);
            assertThat(read).allSatisfy(r -> assertThat(r.streamlet()).isZero());
            assertThat(values(read)).containsExactlyElementsOf(sent);
        }
    }

    @Test
    void aSuccessorKeepsThePreparedPartsItNamesAndAbortsTheRestOnEveryBroker() throws Exception {
        String stream = "ctxn.successor";
        List<Integer> owners = createStream(stream);
        NearstreamProducerConfig config = config(stream);
        NearstreamTransactionalProducer a = new NearstreamTransactionalProducer(config, "w");
        List<BrokerTxnRef> parts;
        Map<String, Integer> sent;
        Map<Integer, Long> epochsOfA;
        try {
            epochsOfA = a.initTransactions(Map.of());
            a.beginTransaction();
            sent = sendKeyed(a, config, "p-", 600);
            parts = a.prepareTransaction();
            assertThat(parts)
                    .extracting(BrokerTxnRef::broker)
                    .containsExactlyElementsOf(allBrokerIds());

            // An open transaction on every broker, for the successor to abort.
            a.beginTransaction();
            for (int s = 0; s < STREAMLETS; s++) {
                a.sendTo(s, bytes("open-" + s));
            }
            a.flush();
            assertThat(listedByBroker(stream))
                    .allSatisfy(
                            (b, l) ->
                                    assertThat(l)
                                            .extracting(TransactionInfo::state)
                                            .containsExactlyInAnyOrder(
                                                    TransactionInfo.State.PREPARED,
                                                    TransactionInfo.State.OPEN));

            // Keep the first and last brokers' parts, not a prefix, and let the middle one go.
            BrokerTxnRef first = parts.get(0);
            BrokerTxnRef dropped = parts.get(1);
            BrokerTxnRef last = parts.get(2);
            try (NearstreamTransactionalProducer b =
                    new NearstreamTransactionalProducer(config, "w")) {
                Map<Integer, Long> epochsOfB =
                        b.initTransactions(
                                Map.of(
                                        first.broker(), first.ref().serial(),
                                        last.broker(), last.ref().serial()));
                assertThat(epochsOfB.keySet()).containsExactlyElementsOf(allBrokerIds());
                epochsOfB.forEach((id, e) -> assertThat(e).isGreaterThan(epochsOfA.get(id)));
            }

            Map<Integer, List<TransactionInfo>> listed = listedByBroker(stream);
            for (BrokerTxnRef kept : List.of(first, last)) {
                assertThat(listed.get(kept.broker()))
                        .as("transactions on broker %d", kept.broker())
                        .extracting(i -> i.ref(stream))
                        .containsExactly(kept.ref());
                assertThat(listed.get(kept.broker()).get(0).state())
                        .isEqualTo(TransactionInfo.State.PREPARED);
            }
            assertThat(listed.get(dropped.broker()))
                    .as("transactions on broker %d", dropped.broker())
                    .isEmpty();

            // The zombie is fenced on whichever broker it writes to.
            for (int s = 0; s < STREAMLETS; s++) {
                a.sendTo(s, bytes("zombie-" + s));
            }
            assertThatThrownBy(a::flush)
                    .isInstanceOf(NearstreamClientException.class)
                    .hasMessageContaining("another producer took over transactional id 'w'");
        } finally {
            a.close();
        }

        BrokerTxnRef first = parts.get(0);
        BrokerTxnRef dropped = parts.get(1);
        BrokerTxnRef last = parts.get(2);
        // A committer holding only the references commits the kept parts, twice each.
        try (NearstreamClient committer = NearstreamClient.connect(CLUSTER.bootstrap())) {
            for (BrokerTxnRef kept : List.of(first, last, first, last)) {
                NearstreamTransactionalProducer.commit(committer, kept, BACKOFF, TIMEOUT);
            }
            assertThatThrownBy(
                            () ->
                                    NearstreamTransactionalProducer.commit(
                                            committer, dropped, BACKOFF, TIMEOUT))
                    .isInstanceOfSatisfying(
                            NearstreamClientException.class,
                            e -> assertThat(e.status()).isEqualTo(StatusCode.TXN_ABORTED));
        }

        List<NearstreamRecord> read = visible(stream);
        assertThat(read)
                .allSatisfy(
                        r -> assertThat(owners.get(r.streamlet())).isNotEqualTo(dropped.broker()));
        assertThat(values(read))
                .doesNotHaveDuplicates()
                .containsExactlyInAnyOrderElementsOf(
                        sentToBrokers(sent, owners, Set.of(first.broker(), last.broker())));
        assertThat(listedByBroker(stream)).allSatisfy((b, l) -> assertThat(l).isEmpty());
    }

    @Test
    void commitTransactionCommitsEveryBroker() throws Exception {
        String stream = "ctxn.commit";
        createStream(stream);
        NearstreamProducerConfig config = config(stream);
        try (NearstreamTransactionalProducer producer =
                new NearstreamTransactionalProducer(config, "w")) {
            producer.initTransactions(0L);
            producer.beginTransaction();
            Map<String, Integer> sent = sendKeyed(producer, config, "c-", 1200);
            producer.flush();
            assertThat(listedByBroker(stream))
                    .allSatisfy(
                            (b, l) ->
                                    assertThat(l)
                                            .extracting(TransactionInfo::state)
                                            .containsExactly(TransactionInfo.State.OPEN));
            assertThat(visible(stream)).isEmpty();

            producer.commitTransaction();
            assertThat(producer.inTransaction()).isFalse();
            assertThat(values(visible(stream)))
                    .doesNotHaveDuplicates()
                    .containsExactlyInAnyOrderElementsOf(sent.keySet());
            assertThat(listedByBroker(stream)).allSatisfy((b, l) -> assertThat(l).isEmpty());
            assertThat(producer.listTransactions("")).isEmpty();
        }
    }
}
