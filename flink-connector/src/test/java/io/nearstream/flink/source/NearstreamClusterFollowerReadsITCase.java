package io.nearstream.flink.source;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.Durability;
import io.nearstream.client.FetchEntry;
import io.nearstream.client.FetchResponse;
import io.nearstream.client.Position;
import io.nearstream.client.StatusCode;
import io.nearstream.client.StreamConfig;
import io.nearstream.client.StreamletFetch;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import io.nearstream.flink.source.testutils.Await;
import io.nearstream.flink.source.testutils.ClusterReads;
import io.nearstream.testing.NearstreamClusterExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Follower reads over a broker cluster whose stream keeps a copy of every streamlet on the readers'
 * host (docs/flink-connector.md, "Over a broker cluster"; docs/cluster.md, "Follower reads"):
 * broker 1 runs on the readers' host ({@code localhost}), brokers 2 and 3 report other hosts, all
 * started with {@code --follower-reads}, and with replication 3 broker 1 is in the in-sync set of
 * every streamlet. Whatever the read mode, the readers read every streamlet from broker 1: those it
 * leads as their leader, the others from its in-sync copy. A bounded job reads every record exactly
 * once, and the brokers' own counters show that the remote leaders served no read.
 */
class NearstreamClusterFollowerReadsITCase {

    private static final int STREAMLETS = 6;
    private static final int PER_STREAMLET = 2_000;

    /** Leaders tell their in-sync followers what to show only with {@code --follower-reads}. */
    @RegisterExtension
    static final NearstreamClusterExtension CLUSTER =
            new NearstreamClusterExtension(
                    List.of("localhost", "remote-2", "remote-3"), List.of("--follower-reads"));

    @RegisterExtension
    static final MiniClusterExtension FLINK =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    /**
     * AUTO: the streamlets broker 1 leads are pushed by it as their leader, the others by it from
     * its in-sync copy (a replica-read PushSubscribe): every record comes through broker 1's one
     * push subscription, and no fetch or push subscription reaches the remote leaders.
     */
    @Test
    void theLocalInSyncReplicaPushesTheStreamletsOfRemoteLeaders() throws Exception {
        String stream = "follower-push";
        ClusterReads.Filled filled = fillWithBrokerOneInSync(stream);

        List<String> counters =
                List.of(
                        "nearstream_push_subscribe_requests_total",
                        "nearstream_push_records_total",
                        "nearstream_fetch_requests_total",
                        "nearstream_fetch_records_total",
                        "nearstream_fetch_follower_chunks_total");
        long[][] before = ClusterReads.stats(CLUSTER, counters);

        List<String> read = ClusterReads.readAll(followerReadingSource(stream, ReadMode.AUTO), 2);

        assertThat(read).containsExactlyInAnyOrderElementsOf(filled.records());
        long[][] after = ClusterReads.stats(CLUSTER, counters);
        // Broker 1 (local): one subscription for the host carried every record; no fetch.
        assertThat(after[0][0] - before[0][0]).as("broker 1 push subscribes").isEqualTo(1);
        assertThat(after[0][1] - before[0][1])
                .as("records broker 1 pushed")
                .isGreaterThanOrEqualTo((long) STREAMLETS * PER_STREAMLET);
        for (int n = 2; n < counters.size(); n++) {
            assertThat(after[0][n] - before[0][n]).as("broker 1 " + counters.get(n)).isZero();
        }
        // Brokers 2 and 3 (remote leaders): nothing at all.
        for (int b = 1; b < CLUSTER.size(); b++) {
            String broker = "broker " + CLUSTER.brokerId(b);
            for (int n = 0; n < counters.size(); n++) {
                assertThat(after[b][n] - before[b][n]).as(broker + " " + counters.get(n)).isZero();
            }
        }
    }

    /**
     * PULL: the readers fetch every streamlet from broker 1, those of remote leaders as replica
     * reads of its copies; the remote leaders serve no fetch.
     */
    @Test
    void theLocalInSyncReplicaServesTheFetchesOfRemoteLeadersStreamlets() throws Exception {
        String stream = "follower-pull";
        ClusterReads.Filled filled = fillWithBrokerOneInSync(stream);
        awaitBrokerOneServesReplicaReads(stream);

        List<String> counters =
                List.of(
                        "nearstream_fetch_requests_total",
                        "nearstream_fetch_records_total",
                        "nearstream_fetch_follower_chunks_total",
                        "nearstream_push_subscribe_requests_total");
        long[][] before = ClusterReads.stats(CLUSTER, counters);

        List<String> read = ClusterReads.readAll(followerReadingSource(stream, ReadMode.PULL), 2);

        assertThat(read).containsExactlyInAnyOrderElementsOf(filled.records());
        long[][] after = ClusterReads.stats(CLUSTER, counters);
        // Broker 1 (local): every record, those of remote leaders from its copies.
        assertThat(after[0][0] - before[0][0]).as("broker 1 fetches").isPositive();
        assertThat(after[0][1] - before[0][1])
                .as("records broker 1 fetched")
                .isGreaterThanOrEqualTo((long) STREAMLETS * PER_STREAMLET);
        assertThat(after[0][2] - before[0][2])
                .as("chunks broker 1 fetched from copies")
                .isPositive();
        // Brokers 2 and 3 (remote leaders): no fetch at all; and PULL subscribes nowhere.
        for (int b = 0; b < CLUSTER.size(); b++) {
            String broker = "broker " + CLUSTER.brokerId(b);
            if (b > 0) {
                for (int n = 0; n < counters.size(); n++) {
                    assertThat(after[b][n] - before[b][n])
                            .as(broker + " " + counters.get(n))
                            .isZero();
                }
            }
            assertThat(after[b][3] - before[b][3]).as(broker + " push subscribes").isZero();
        }
    }

    /** A bounded source of {@code stream} with follower reads, reading in {@code mode}. */
    private static NearstreamSource<String> followerReadingSource(String stream, ReadMode mode) {
        return NearstreamSource.<String>builder()
                .setBrokers(CLUSTER.bootstrap())
                .setStream(stream)
                .setReadMode(mode)
                .setFollowerReads(true)
                .setPushSlots(4, 64 * 1024) // small slots: many per streamlet (push reads only)
                .setDeserializer(NearstreamRecordDeserializationSchema.utf8())
                .setFetchMaxWaitMs(100)
                .setBounded(NearstreamStoppingPositions.latest())
                .build();
    }

    /**
     * Creates {@code stream} with replication 3 (durable, as replication needs), fills it, and
     * waits until the cluster's view has broker 1 in the in-sync set of every streamlet, which is
     * what the source decides by.
     */
    private static ClusterReads.Filled fillWithBrokerOneInSync(String stream) throws Exception {
        ClusterReads.Filled filled =
                ClusterReads.fill(
                        CLUSTER,
                        StreamConfig.of(stream, STREAMLETS)
                                .withDurability(Durability.ASYNC)
                                .withReplication(3),
                        PER_STREAMLET);
        // Without streamlets led elsewhere, this would test nothing new.
        assertThat(filled.owners()).as("leaders").anyMatch(leader -> leader != 1);
        ClusterReads.awaitInSyncEverywhere(CLUSTER, stream, 1);
        return filled;
    }

    /**
     * Waits until broker 1 answers a replica read of every streamlet (its copy in memory holds a
     * whole view of each leader's), so that the readers' first fetches do not fall back to the
     * remote leaders while the views are still on their way.
     */
    private static void awaitBrokerOneServesReplicaReads(String stream) throws Exception {
        List<FetchEntry> entries = new ArrayList<>();
        for (int s = 0; s < STREAMLETS; s++) {
            entries.add(new FetchEntry(s, Position.EARLIEST, 1));
        }
        AtomicReference<List<String>> seen = new AtomicReference<>();
        Await.until(
                "broker 1 serves replica reads of every streamlet of " + stream,
                Duration.ofSeconds(30),
                () -> {
                    try (FetchResponse r =
                            CLUSTER.broker(0)
                                    .client()
                                    .fetch(stream, 0, entries, true)
                                    .get(10, TimeUnit.SECONDS)) {
                        List<String> statuses = new ArrayList<>();
                        for (StreamletFetch f : r.results()) {
                            statuses.add(f.streamlet() + ": " + f.status() + " " + f.message());
                        }
                        seen.set(statuses);
                        return r.results().stream()
                                .allMatch(
                                        f -> f.status() == StatusCode.OK && !f.blocks().isEmpty());
                    }
                },
                () -> String.valueOf(seen.get()));
    }
}
