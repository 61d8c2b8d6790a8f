package io.nearstream.flink.source.enumerator;

import io.nearstream.client.BrokerInfo;
import io.nearstream.client.ClusterMetadata;
import io.nearstream.client.ReplicaSet;
import io.nearstream.client.StreamPlacement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;

/**
 * Where a stream's streamlets are served, as locality: which broker a reader on a given host reads
 * each streamlet from, and whether that broker is on the reader's host. The enumerator assigns each
 * split to a reader on the host of its serving broker when there is one; the readers and the
 * enumerator apply the same rule, so both agree on which splits are pushed, and from which broker.
 *
 * <p>One broker (standalone, id {@link #STANDALONE_BROKER}): it serves every streamlet, local to
 * the readers on its host ({@link BrokerLocality}). A cluster (docs/cluster.md): a streamlet's
 * <i>serving broker for a host</i> is its leader when the leader runs on that host; otherwise the
 * lowest-id broker on that host in the streamlet's in-sync set, which pushes it from its own copy
 * (docs/cluster.md, "Follower reads"); otherwise the leader, on another host. A reader pushes the
 * streamlets whose serving broker is on its host (one push subscription per host, broker and job)
 * and pulls the others from their leaders.
 */
@Internal
public final class StreamLocality {

    /** The id a standalone broker goes by in push groups and events. */
    public static final int STANDALONE_BROKER = 0;

    /** Leader of each streamlet; null for a standalone broker. */
    @Nullable private final List<Integer> leaders;

    /**
     * The in-sync set of each streamlet, lowest id first (ids compare unsigned, as on the wire);
     * null for a standalone broker.
     */
    @Nullable private final List<List<Integer>> inSync;

    /** Locality of each broker, by id (ascending, so the first local one is the lowest). */
    private final TreeMap<Integer, BrokerLocality> brokers;

    private final Map<Integer, String> addresses;

    private StreamLocality(
            @Nullable List<Integer> leaders,
            @Nullable List<List<Integer>> inSync,
            TreeMap<Integer, BrokerLocality> brokers,
            Map<Integer, String> addresses) {
        this.leaders = leaders;
        this.inSync = inSync;
        this.brokers = brokers;
        this.addresses = addresses;
    }

    /** One broker at {@code address}, which stores every streamlet. */
    public static StreamLocality standalone(String address) {
        TreeMap<Integer, BrokerLocality> brokers = new TreeMap<>();
        brokers.put(STANDALONE_BROKER, BrokerLocality.resolve(address));
        return new StreamLocality(null, null, brokers, Map.of(STANDALONE_BROKER, address));
    }

    /**
     * The stream's placement in a cluster's view: each streamlet's leader and in-sync set, and the
     * host of every broker. Resolves host names (DNS): call it off the coordinator thread.
     *
     * @throws IllegalStateException when the view does not place the stream
     */
    public static StreamLocality of(ClusterMetadata view, String stream, boolean followerReads) {
        StreamPlacement placement =
                view.placement(stream)
                        .orElseThrow(
                                () ->
                                        new IllegalStateException(
                                                "The cluster does not place stream '"
                                                        + stream
                                                        + "'"));
        TreeMap<Integer, BrokerLocality> brokers = new TreeMap<>();
        Map<Integer, String> addresses = new HashMap<>();
        for (BrokerInfo b : view.brokers()) {
            brokers.put(b.id(), BrokerLocality.ofHost(b.host()));
            addresses.put(b.id(), b.address());
        }
        List<List<Integer>> inSync = new ArrayList<>(placement.streamlets());
        for (ReplicaSet set : placement.replicaSets()) {
            List<Integer> isr = new ArrayList<>(set.isr());
            isr.sort(Integer::compareUnsigned);
            inSync.add(List.copyOf(isr));
        }
        // Without follower reads no follower serves a streamlet: every one is its leader's.
        return new StreamLocality(
                List.copyOf(placement.owners()), followerReads ? inSync : null, brokers, addresses);
    }

    /**
     * The id of {@code streamlet}'s leader ({@link #STANDALONE_BROKER} for a standalone broker), or
     * -1 for a streamlet the view does not know yet.
     */
    public int leaderOf(int streamlet) {
        if (leaders == null) {
            return STANDALONE_BROKER;
        }
        return knows(streamlet) ? leaders.get(streamlet) : -1;
    }

    /**
     * The broker a reader on {@code readerHost} reads {@code streamlet} from: the leader when it
     * runs on that host; else the lowest-id broker on that host in the streamlet's in-sync set;
     * else the leader, on another host ({@link #isLocal} then says no). -1 for a streamlet the view
     * does not know yet.
     */
    public int servingBroker(int streamlet, @Nullable String readerHost) {
        int leader = leaderOf(streamlet);
        if (inSync == null || leader < 0 || runsOn(leader, readerHost)) {
            return leader;
        }
        for (int follower : inSync.get(streamlet)) {
            if (runsOn(follower, readerHost)) {
                return follower;
            }
        }
        return leader;
    }

    /**
     * Whether a reader on {@code readerHost} runs on the host of {@code streamlet}'s serving broker
     * ({@link #servingBroker}): its leader's, or that of one of its in-sync replicas.
     */
    public boolean isLocal(int streamlet, @Nullable String readerHost) {
        return runsOn(servingBroker(streamlet, readerHost), readerHost);
    }

    /** The brokers a reader on {@code readerHost} can push from: those on its host, ascending. */
    public List<Integer> localBrokers(@Nullable String readerHost) {
        List<Integer> local = new ArrayList<>();
        for (Map.Entry<Integer, BrokerLocality> b : brokers.entrySet()) {
            if (b.getValue().isLocal(readerHost)) {
                local.add(b.getKey());
            }
        }
        return local;
    }

    /** The address of broker {@code id}. */
    public String address(int id) {
        return addresses.get(id);
    }

    private boolean knows(int streamlet) {
        return streamlet >= 0 && streamlet < leaders.size();
    }

    /** Whether broker {@code id} is registered and runs on {@code readerHost}. */
    private boolean runsOn(int id, @Nullable String readerHost) {
        BrokerLocality b = brokers.get(id);
        return b != null && b.isLocal(readerHost);
    }

    @Override
    public String toString() {
        return "StreamLocality{leaders="
                + leaders
                + ", inSync="
                + inSync
                + ", brokers="
                + brokers
                + "}";
    }
}
