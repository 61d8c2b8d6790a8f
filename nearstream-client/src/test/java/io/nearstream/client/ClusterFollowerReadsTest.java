package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Fetches of a {@link NearstreamClusterClient} with {@link FollowerReads}, against a {@link
 * FakeCluster} of three brokers where stream {@code r} keeps three in-sync copies of each
 * streamlet: streamlet 0 led by broker 2, 1 by broker 3, 2 by broker 1. The reader prefers broker 1
 * (its own host's) for every streamlet.
 */
class ClusterFollowerReadsTest {

    private static final String STREAM = "r";
    private static final List<Integer> ALL = List.of(0, 1, 2);

    private FakeCluster cluster;
    private FakeCluster.Broker broker1;
    private FakeCluster.Broker broker2;
    private FakeCluster.Broker broker3;
    private NearstreamClusterClient client;
    private final AtomicLong now = new AtomicLong();
    private final FollowerReads reads = new FollowerReads(Duration.ofSeconds(5), now::get);

    @BeforeEach
    void setUp() throws Exception {
        cluster = new FakeCluster();
        broker1 = cluster.add(1, "broker1:7421");
        broker2 = cluster.add(2, "broker2:7422");
        broker3 = cluster.add(3, "broker3:7423");
        cluster.placeReplicas(
                STREAM,
                1,
                List.of(2, 3, 1),
                List.of(inSync(2, 1, 3), inSync(3, 1, 2), inSync(1, 2, 3)));
        broker1.followerReads = true;
        client =
                new NearstreamClusterClient(
                        "broker1:7421", cluster::open, 3, Duration.ofMillis(1), () -> {});
        for (int round = 0; round < 2; round++) {
            List<byte[]> chunks = new ArrayList<>();
            for (int s : ALL) {
                chunks.add(chunk(s + "-" + round));
            }
            client.append(STREAM, new int[] {0, 1, 2}, chunks).get(10, TimeUnit.SECONDS);
        }
        for (int s : ALL) {
            reads.readFrom(s, 1);
        }
    }

    @AfterEach
    void tearDown() {
        client.close();
        assertThat(cluster.openResponses()).as("fetch responses left open").isZero();
        cluster.close();
    }

    private static ReplicaSet inSync(int... replicas) {
        List<Integer> ids = new ArrayList<>();
        for (int r : replicas) {
            ids.add(r);
        }
        return new ReplicaSet(1, ids, ids);
    }

    private static byte[] chunk(String record) {
        return new ChunkBuilder()
                .add(record.getBytes(StandardCharsets.UTF_8))
                .build(0, 0, 1_700_000_000_000L);
    }

    private static List<FetchEntry> from(int offset, List<Integer> streamlets) {
        List<FetchEntry> entries = new ArrayList<>();
        for (int s : streamlets) {
            entries.add(new FetchEntry(s, new Position(0, 0, offset), 1 << 20));
        }
        return entries;
    }

    /** Each streamlet's chunk positions in the answer to a fetch with {@code reads}. */
    private List<List<Position>> fetch(int maxWaitMs, List<FetchEntry> entries) throws Exception {
        try (FetchResponse r =
                client.fetch(STREAM, maxWaitMs, entries, reads).get(10, TimeUnit.SECONDS)) {
            List<List<Position>> out = new ArrayList<>();
            for (StreamletFetch f : r.results()) {
                assertThat(f.status()).as(f.message()).isEqualTo(StatusCode.OK);
                out.add(f.blocks().stream().map(ChunkBlock::at).toList());
            }
            return out;
        }
    }

    /** Both chunks of every streamlet of {@code streamlets}, at its leader's positions. */
    private static List<List<Position>> leaderPositions(List<Integer> streamlets) {
        int[] leaders = {2, 3, 1};
        List<List<Position>> out = new ArrayList<>();
        for (int s : streamlets) {
            out.add(List.of(new Position(leaders[s], s, 0), new Position(leaders[s], s, 1)));
        }
        return out;
    }

    private static List<String> fetches(FakeCluster.Broker b) {
        return b.calls("fetch");
    }

    @Test
    void everyStreamletIsFetchedFromTheChosenFollowerInOneReplicaRead() throws Exception {
        assertThat(fetch(0, from(0, ALL))).isEqualTo(leaderPositions(ALL));
        // Broker 1 leads streamlet 2 and follows the others: one request, marked, for all.
        assertThat(fetches(broker1)).containsExactly("fetch r wait 0 [0, 1, 2] replica-read");
        assertThat(fetches(broker2)).isEmpty();
        assertThat(fetches(broker3)).isEmpty();
    }

    @Test
    void withoutFollowerReadsEveryStreamletGoesToItsLeaderUnmarked() throws Exception {
        try (FetchResponse r = client.fetch(STREAM, 0, from(0, ALL)).get(10, TimeUnit.SECONDS)) {
            assertThat(r.results()).allMatch(StreamletFetch::ok);
        }
        FollowerReads leaders = new FollowerReads();
        leaders.readFrom(0, 2);
        leaders.readFrom(1, 3);
        leaders.readFrom(2, 1);
        client.fetch(STREAM, 0, from(0, ALL), leaders).get(10, TimeUnit.SECONDS).close();
        for (FakeCluster.Broker b : List.of(broker1, broker2, broker3)) {
            assertThat(fetches(b)).hasSize(2).noneMatch(c -> c.contains("replica-read"));
        }
        assertThat(fetches(broker2)).containsOnly("fetch r wait 0 [0]");
    }

    @Test
    void aRefusingFollowerSendsItsStreamletsToTheirLeadersInTheSameFetch() throws Exception {
        broker1.followerReads = false; // as a broker started without --follower-reads

        assertThat(fetch(0, from(0, ALL))).isEqualTo(leaderPositions(ALL));
        assertThat(fetches(broker1)).containsExactly("fetch r wait 0 [0, 1, 2] replica-read");
        assertThat(fetches(broker2)).containsExactly("fetch r wait 0 [0]");
        assertThat(fetches(broker3)).containsExactly("fetch r wait 0 [1]");
        assertThat(reads.fellBack(0)).isTrue();
        assertThat(reads.fellBack(1)).isTrue();
        assertThat(reads.fellBack(2)).as("led by broker 1, which served it").isFalse();

        // Until the pause is over the leaders serve them, at the position reached.
        assertThat(fetch(0, from(1, ALL))).extracting(List::size).containsExactly(1, 1, 1);
        assertThat(fetches(broker1)).endsWith("fetch r wait 0 [2]");
        assertThat(fetches(broker2)).endsWith("fetch r wait 0 [0]").hasSize(2);

        // Then the follower is asked again, and serves once it can.
        broker1.followerReads = true;
        now.addAndGet(Duration.ofSeconds(5).toNanos());
        assertThat(fetch(0, from(1, ALL))).extracting(List::size).containsExactly(1, 1, 1);
        assertThat(fetches(broker1)).endsWith("fetch r wait 0 [0, 1, 2] replica-read");
        assertThat(fetches(broker2)).hasSize(2);
        assertThat(fetches(broker3)).hasSize(2);
    }

    @Test
    void anUnreachableFollowerSendsItsStreamletToTheLeader() throws Exception {
        reads.readFrom(0, 3);
        broker3.down = true;

        assertThat(fetch(0, from(0, List.of(0)))).isEqualTo(leaderPositions(List.of(0)));
        assertThat(fetches(broker3)).containsExactly("fetch r wait 0 [0] replica-read");
        assertThat(fetches(broker2)).containsExactly("fetch r wait 0 [0]");
        assertThat(reads.fellBack(0)).isTrue();
    }

    @Test
    void aPullConsumerWithFollowerReadsPollsTheFollower() throws Exception {
        try (NearstreamPullConsumer consumer =
                NearstreamPullConsumer.builder(client, STREAM)
                        .followerReads(reads)
                        .maxWait(Duration.ZERO)
                        .build()) {
            for (int s : ALL) {
                consumer.assign(s, StartingPosition.earliest());
            }
            List<String> values = new ArrayList<>();
            for (NearstreamRecord r : consumer.poll(Duration.ofSeconds(5))) {
                values.add(new String(r.value(), StandardCharsets.UTF_8));
            }
            assertThat(values).containsExactly("0-0", "0-1", "1-0", "1-1", "2-0", "2-1");
        }
        assertThat(fetches(broker1)).first().isEqualTo("fetch r wait 0 [0, 1, 2] replica-read");
        assertThat(fetches(broker2)).isEmpty();
        assertThat(fetches(broker3)).isEmpty();
    }

    @Test
    void aLongPollMarksOnlyTheRequestsToFollowers() throws Exception {
        reads.readFromLeader(1); // to broker 3, its leader; streamlet 0 to broker 1, a follower
        List<List<Position>> got = fetch(50, from(2, List.of(0, 1)));
        assertThat(got).containsExactly(List.of(), List.of());
        assertThat(fetches(broker1))
                .containsExactly(
                        "fetch r wait 0 [0] replica-read", "fetch r wait 50 [0] replica-read");
        assertThat(fetches(broker3)).containsExactly("fetch r wait 0 [1]", "fetch r wait 50 [1]");
        assertThat(fetches(broker2)).isEmpty();
    }
}
