package io.nearstream.flink.source.enumerator;

import io.nearstream.client.BrokerInfo;
import io.nearstream.client.ClusterMetadata;
import io.nearstream.client.StreamPlacement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;

/**
 * Where a stream's streamlets live, as locality: which readers are on the host of each streamlet's
 * broker, and which streamlets a reader reads by push. The enumerator assigns each split to a
 * reader on its broker's host when there is one; the readers and the enumerator apply the same
 * rule, so both agree on which splits are pushed.
 *
 * <p>One broker (standalone, id {@link #STANDALONE_BROKER}): every streamlet is local to the
 * readers on the broker's host ({@link BrokerLocality}). A cluster (docs/cluster.md): a streamlet
 * is local to the readers on the host its broker reports; a reader pushes the streamlets of every
 * broker on its host (one push subscription per host, broker and job) and pulls the others.
 */
@Internal
public final class StreamLocality {

    /** The id a standalone broker goes by in push groups and events. */
    public static final int STANDALONE_BROKER = 0;

    /** Broker id of each streamlet. */
    private final List<Integer> owners;

    /** Locality of each broker, by id (ascending, so the first local one is the lowest). */
    private final TreeMap<Integer, BrokerLocality> brokers;

    private final Map<Integer, String> addresses;

    private StreamLocality(
            List<Integer> owners,
            TreeMap<Integer, BrokerLocality> brokers,
            Map<Integer, String> addresses) {
        this.owners = owners;
        this.brokers = brokers;
        this.addresses = addresses;
    }

    /** One broker at {@code address}, which stores every streamlet. */
    public static StreamLocality standalone(String address) {
        TreeMap<Integer, BrokerLocality> brokers = new TreeMap<>();
        brokers.put(STANDALONE_BROKER, BrokerLocality.resolve(address));
        return new StreamLocality(null, brokers, Map.of(STANDALONE_BROKER, address));
    }

    /**
     * The stream's placement in a cluster's view. Resolves host names (DNS): call it off the
     * coordinator thread.
     *
     * @throws IllegalStateException when the view does not place the stream
     */
    public static StreamLocality of(ClusterMetadata view, String stream) {
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
        return new StreamLocality(List.copyOf(placement.owners()), brokers, addresses);
    }

    /**
     * The id of the broker that stores {@code streamlet} ({@link #STANDALONE_BROKER} for a
     * standalone broker), or -1 for a streamlet the view does not know yet.
     */
    public int brokerOf(int streamlet) {
        if (owners == null) {
            return STANDALONE_BROKER;
        }
        return streamlet < owners.size() ? owners.get(streamlet) : -1;
    }

    /** Whether a reader on {@code readerHost} runs on the host of {@code streamlet}'s broker. */
    public boolean isLocal(int streamlet, @Nullable String readerHost) {
        if (owners != null && streamlet >= owners.size()) {
            return false; // a streamlet the view does not know yet: assume nothing
        }
        BrokerLocality b = brokers.get(brokerOf(streamlet));
        return b != null && b.isLocal(readerHost);
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

    @Override
    public String toString() {
        return "StreamLocality{owners=" + owners + ", brokers=" + brokers + "}";
    }
}
