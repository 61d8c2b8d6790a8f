package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.nearstream.testing.NearstreamClusterExtension;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link NearstreamTransactionalProducer} on a replicated stream over three real brokers and a real
 * ZooKeeper (docs/protocol.md, "Transaction scopes"; docs/cluster.md, "Replication"): a transaction
 * is one part per streamlet it writes, each in the streamlet's scope on its leader, and the leader
 * is killed with SIGKILL (not restarted) while a part is prepared or still open. The new leader
 * holds the part as it was last acknowledged, and the client finds it there: a committer holding
 * only the references commits both parts, and a producer whose transaction is open goes on writing
 * and commits it. Every record is read exactly once, and no transaction is left.
 *
 * <p>Real brokers, because what is checked is what a failover keeps of a transaction and what
 * readers see. A cluster per test: each leaves one broker dead.
 */
class ReplicatedTransactionsITCase {

    /** A short ZooKeeper session, so the dead leader is replaced within seconds. */
    private static final int SESSION_MS = 2000;

    private static final int STREAMLETS = 3;

    /** Small segments, so that a part spans several and a failover has segments behind. */
    private static final int SEGMENT_BYTES = 16 * 1024;

    private static final Duration BACKOFF = Duration.ofMillis(100);

    /** Several failovers' worth. */
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    @RegisterExtension
    final NearstreamClusterExtension cluster =
            new NearstreamClusterExtension(
                    List.of("host-a", "host-a", "host-a"),
                    List.of("--zookeeper-session-ms", Integer.toString(SESSION_MS)));

    @Test
    void preparedPartsCommitOnTheNewLeaderAfterTheirLeaderDies() throws Throwable {
        withBrokerLogs(
                () -> {
                    String stream = "rtxn.prepared";
                    StreamPlacement before = createReplicated(stream);
                    List<BrokerTxnRef> parts;
                    List<String> sent = new ArrayList<>();
                    try (NearstreamTransactionalProducer producer =
                            new NearstreamTransactionalProducer(config(stream), "w")) {
                        Map<Integer, Long> epochs = producer.initTransactions(Map.of());
                        assertThat(producer.streamletScopes()).isTrue();
                        assertThat(epochs.keySet()).containsExactly(0, 1, 2);
                        producer.beginTransaction();
                        for (int i = 0; i < 2_000; i++) {
                            String v = "p-" + (i % 2) + "-" + i;
                            sent.add(v);
                            producer.sendTo(i % 2, bytes(v));
                        }
                        parts = producer.prepareTransaction();
                    }

                    // One part per streamlet written, in its scope, named after its leader.
                    assertThat(parts).extracting(BrokerTxnRef::partKey).containsExactly(0, 1);
                    for (BrokerTxnRef part : parts) {
                        int s = part.ref().scope();
                        assertThat(part.broker()).isEqualTo(before.owner(s));
                        assertThat(listedOnLeader(before, stream, s))
                                .as("streamlet %d's leader lists its part", s)
                                .extracting(i -> i.ref(stream), TransactionInfo::state)
                                .containsExactly(tuple(part.ref(), TransactionInfo.State.PREPARED));
                    }
                    assertThat(visible(stream)).as("prepared parts are not committed").isEmpty();

                    int dead = before.owner(0);
                    cluster.kill(dead - 1);

                    // The committer knows only the references, and learns of the new leader.
                    try (NearstreamClient committer =
                            NearstreamClient.connect(cluster.bootstrap())) {
                        for (BrokerTxnRef part : parts) {
                            NearstreamTransactionalProducer.commit(
                                    committer, part, BACKOFF, TIMEOUT);
                        }
                        // Committing again (a recovered committer) shows nothing twice.
                        for (BrokerTxnRef part : parts) {
                            NearstreamTransactionalProducer.commit(
                                    committer, part, BACKOFF, TIMEOUT);
                        }
                    }
                    StreamPlacement after = placement(stream);
                    assertThat(after.owner(0)).as("streamlet 0 failed over").isNotEqualTo(dead);
                    assertThat(after.replicaSet(0).leaderEpoch())
                            .isGreaterThan(before.replicaSet(0).leaderEpoch());

                    assertExactly(visible(stream), sent);
                    assertNoTransactionLeft(stream, dead);
                });
    }

    @Test
    void anOpenTransactionGoesOnOnTheNewLeaderAndCommits() throws Throwable {
        withBrokerLogs(
                () -> {
                    String stream = "rtxn.open";
                    StreamPlacement before = createReplicated(stream);
                    List<String> sent = new ArrayList<>();
                    int dead = before.owner(0);
                    try (NearstreamTransactionalProducer producer =
                            new NearstreamTransactionalProducer(config(stream), "w")) {
                        producer.initTransactions(Map.of());
                        producer.beginTransaction();
                        send(producer, "before-", 1_500, sent);
                        producer.flush();

                        cluster.kill(dead - 1);
                        // TxnAppends to the dead leader fail, then go to the new one, which holds
                        // the open part with every acknowledged chunk.
                        send(producer, "after-", 1_500, sent);
                        List<BrokerTxnRef> parts = producer.prepareTransaction();
                        assertThat(parts)
                                .extracting(BrokerTxnRef::partKey)
                                .containsExactly(0, 1, 2);
                        for (BrokerTxnRef part : parts) {
                            producer.commit(part);
                        }
                        assertThat(producer.failure()).isNull();
                    }
                    assertThat(placement(stream).owner(0)).isNotEqualTo(dead);
                    assertExactly(visible(stream), sent);
                    assertNoTransactionLeft(stream, dead);
                });
    }

    // ---- helpers ------------------------------------------------------------------------------

    /** Replication 2, durability sync, small segments; the placement once created. */
    private StreamPlacement createReplicated(String stream) throws Exception {
        try (NearstreamClient admin = NearstreamClient.connect(cluster.bootstrap())) {
            admin.createStream(
                            new StreamConfig(
                                    stream,
                                    STREAMLETS,
                                    SEGMENT_BYTES,
                                    4,
                                    0,
                                    Durability.SYNC,
                                    -1,
                                    -1,
                                    2))
                    .get(30, TimeUnit.SECONDS);
        }
        StreamPlacement p = placement(stream);
        assertThat(p.replicated()).isTrue();
        // Round-robin: every broker leads one streamlet, so a leader's death leaves the others.
        assertThat(p.owners()).doesNotHaveDuplicates();
        return p;
    }

    private StreamPlacement placement(String stream) throws Exception {
        try (NearstreamClient admin = NearstreamClient.connect(cluster.bootstrap())) {
            return admin.clusterMetadata(stream)
                    .get(10, TimeUnit.SECONDS)
                    .placement(stream)
                    .orElseThrow();
        }
    }

    private NearstreamProducerConfig config(String stream) {
        return NearstreamProducerConfig.builder(cluster.bootstrap(), stream)
                .linger(Duration.ofMillis(2))
                .batchSizeBytes(1024)
                .retryBackoff(BACKOFF)
                .deliveryTimeout(TIMEOUT)
                .build();
    }

    /** Record {@code prefix + i} to streamlet {@code i % STREAMLETS}. */
    private static void send(
            NearstreamTransactionalProducer producer, String prefix, int count, List<String> sent) {
        for (int i = 0; i < count; i++) {
            String v = prefix + i;
            sent.add(v);
            producer.sendTo(i % STREAMLETS, bytes(v));
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** What streamlet {@code s}'s leader in {@code p} lists in its scope, asked directly. */
    private List<TransactionInfo> listedOnLeader(StreamPlacement p, String stream, int s)
            throws Exception {
        return cluster.broker(p.owner(s) - 1)
                .client()
                .txnList(stream, "", s)
                .get(10, TimeUnit.SECONDS);
    }

    /** Everything readers see in the stream now, read through the cluster. */
    private List<NearstreamRecord> visible(String stream) {
        List<NearstreamRecord> records = new ArrayList<>();
        try (NearstreamPullConsumer consumer =
                NearstreamPullConsumer.builder(cluster.bootstrap(), stream)
                        .maxWait(Duration.ofMillis(50))
                        .build()) {
            for (int s = 0; s < STREAMLETS; s++) {
                consumer.assign(s, StartingPosition.earliest());
            }
            // A poll ends early with records only; a whole second without any means none are left.
            List<NearstreamRecord> batch;
            while (!(batch = consumer.poll(Duration.ofSeconds(1))).isEmpty()) {
                records.addAll(batch);
            }
        }
        return records;
    }

    /**
     * Every sent record exactly once, each in the streamlet it was sent to, in the order sent there
     * (a failover inside a part neither loses nor repeats a chunk).
     */
    private static void assertExactly(List<NearstreamRecord> read, List<String> sent) {
        List<String> values =
                read.stream()
                        .map(r -> new String(r.value(), StandardCharsets.UTF_8))
                        .collect(Collectors.toList());
        assertThat(values).doesNotHaveDuplicates().containsExactlyInAnyOrderElementsOf(sent);
        Map<Integer, List<String>> readByStreamlet =
                read.stream()
                        .collect(
                                Collectors.groupingBy(
                                        NearstreamRecord::streamlet,
                                        Collectors.mapping(
                                                r -> new String(r.value(), StandardCharsets.UTF_8),
                                                Collectors.toList())));
        readByStreamlet.forEach(
                (s, got) -> {
                    Set<String> there = new HashSet<>(got);
                    assertThat(got)
                            .as("streamlet %d in the order sent", s)
                            .containsExactlyElementsOf(
                                    sent.stream()
                                            .filter(there::contains)
                                            .collect(Collectors.toList()));
                });
    }

    /** No open or prepared transaction in any streamlet's scope, asked of each live leader. */
    private void assertNoTransactionLeft(String stream, int dead) throws Exception {
        StreamPlacement p = placement(stream);
        for (int s = 0; s < STREAMLETS; s++) {
            assertThat(p.owner(s)).isNotEqualTo(dead);
            assertThat(listedOnLeader(p, stream, s))
                    .as("transactions of streamlet %d", s)
                    .isEmpty();
        }
    }

    /** A test body that may throw anything. */
    @FunctionalInterface
    private interface Body {
        void run() throws Exception;
    }

    /** Runs {@code body}; when it fails, prints every broker's log, for whoever has to find out. */
    private void withBrokerLogs(Body body) throws Throwable {
        try {
            body.run();
        } catch (Throwable t) {
            for (int i = 0; i < cluster.size(); i++) {
                System.err.println(
                        "==== log of broker "
                                + cluster.brokerId(i)
                                + " ====\n"
                                + cluster.broker(i).log());
            }
            throw t;
        }
    }
}
