package io.nearstream.flink.source.enumerator;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.BrokerInfo;
import io.nearstream.client.ClusterMetadata;
import io.nearstream.client.ReplicaSet;
import io.nearstream.client.StreamPlacement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The serving broker of a streamlet for a reader's host (docs/flink-connector.md, "Over a broker
 * cluster"): its leader on that host, else the lowest-id in-sync broker on that host, else its
 * leader on another host. Hosts are IP literals, so nothing here asks DNS.
 */
class StreamLocalityTest {

    private static final String HOST_A = "10.0.0.1";
    private static final String HOST_B = "10.0.0.2";
    private static final String HOST_C = "10.0.0.3";

    /**
     * Brokers 1 and 4 on host A, 2 on host B, 3 on host C; streamlet {@code i} has {@code sets[i]};
     * follower reads on.
     */
    private static StreamLocality locality(ReplicaSet... sets) {
        return locality(true, sets);
    }

    private static StreamLocality locality(boolean followerReads, ReplicaSet... sets) {
        List<BrokerInfo> brokers =
                List.of(
                        new BrokerInfo(1, HOST_A + ":7420", HOST_A),
                        new BrokerInfo(2, HOST_B + ":7420", HOST_B),
                        new BrokerInfo(3, HOST_C + ":7420", HOST_C),
                        new BrokerInfo(4, HOST_A + ":7421", HOST_A));
        List<Integer> leaders = new ArrayList<>();
        for (ReplicaSet set : sets) {
            leaders.add(set.replicas().get(0));
        }
        StreamPlacement placement = new StreamPlacement("s", 1, leaders, List.of(sets));
        return StreamLocality.of(
                new ClusterMetadata(1, brokers, List.of(placement), 1), "s", followerReads);
    }

    /** Leader first, as the broker lists the preferred leader. */
    private static ReplicaSet set(List<Integer> replicas, List<Integer> isr) {
        return new ReplicaSet(1, replicas, isr);
    }

    @Test
    void aLeaderOnTheReadersHostServesIt() {
        // Broker 1 on host A leads; broker 4, also on host A, follows in sync.
        StreamLocality l = locality(set(List.of(1, 4, 2), List.of(4, 2, 1)));

        assertThat(l.servingBroker(0, HOST_A)).isEqualTo(1);
        assertThat(l.isLocal(0, HOST_A)).isTrue();
        assertThat(l.leaderOf(0)).isEqualTo(1);
    }

    @Test
    void aRemoteLeaderIsReplacedByTheLowestInSyncBrokerOnTheReadersHost() {
        // Broker 2 on host B leads; brokers 4 and 1, both on host A, follow in sync.
        StreamLocality l = locality(set(List.of(2, 4, 1), List.of(2, 4, 1)));

        assertThat(l.servingBroker(0, HOST_A)).isEqualTo(1);
        assertThat(l.isLocal(0, HOST_A)).isTrue();
        // On the leader's host the leader serves; on a host with no copy, the leader, remote.
        assertThat(l.servingBroker(0, HOST_B)).isEqualTo(2);
        assertThat(l.servingBroker(0, HOST_C)).isEqualTo(2);
        assertThat(l.isLocal(0, HOST_C)).isFalse();
    }

    @Test
    void withoutFollowerReadsOnlyTheLeaderServes() {
        // The layout of the test above, follower reads off (the source's default).
        StreamLocality l = locality(false, set(List.of(2, 4, 1), List.of(2, 4, 1)));

        assertThat(l.servingBroker(0, HOST_A)).isEqualTo(2);
        assertThat(l.isLocal(0, HOST_A)).isFalse();
        assertThat(l.servingBroker(0, HOST_B)).isEqualTo(2);
        assertThat(l.isLocal(0, HOST_B)).isTrue();
    }

    @Test
    void aReplicaOnTheReadersHostThatIsNotInSyncDoesNotServe() {
        // Broker 1 on host A holds a copy but fell out of the in-sync set; broker 4 on host A
        // follows in sync on streamlet 1 only.
        StreamLocality l =
                locality(
                        set(List.of(2, 1, 3), List.of(2, 3)), set(List.of(2, 1, 4), List.of(2, 4)));

        assertThat(l.servingBroker(0, HOST_A)).isEqualTo(2);
        assertThat(l.isLocal(0, HOST_A)).isFalse();
        assertThat(l.servingBroker(1, HOST_A)).isEqualTo(4);
        assertThat(l.isLocal(1, HOST_A)).isTrue();
    }

    @Test
    void withoutACopyOnTheReadersHostTheLeaderServesFromAnotherHost() {
        StreamLocality l = locality(set(List.of(2, 3), List.of(2, 3)));

        assertThat(l.servingBroker(0, HOST_A)).isEqualTo(2);
        assertThat(l.isLocal(0, HOST_A)).isFalse();
        assertThat(l.isLocal(0, null)).isFalse();
        // A reader on host A still pushes from both brokers there, for other streamlets.
        assertThat(l.localBrokers(HOST_A)).containsExactly(1, 4);
    }

    @Test
    void aStreamletTheViewDoesNotKnowIsServedByNoBroker() {
        StreamLocality l = locality(set(List.of(1), List.of(1)));

        assertThat(l.servingBroker(1, HOST_A)).isEqualTo(-1);
        assertThat(l.leaderOf(1)).isEqualTo(-1);
        assertThat(l.isLocal(1, HOST_A)).isFalse();
    }

    @Test
    void aStandaloneBrokerServesEveryStreamlet() {
        StreamLocality l = StreamLocality.standalone(HOST_A + ":7420");

        assertThat(l.servingBroker(5, HOST_A)).isEqualTo(StreamLocality.STANDALONE_BROKER);
        assertThat(l.isLocal(5, HOST_A)).isTrue();
        assertThat(l.isLocal(5, HOST_B)).isFalse();
    }
}
