package io.nearstream.client;

import java.util.List;
import java.util.Optional;

/**
 * The cluster as one broker sees it (docs/protocol.md, "ClusterMetadata (11)"): the registered
 * brokers, ascending id, and the placement of the streams asked for: each streamlet's owner (its
 * leader) and its copies ({@link StreamPlacement#replicaSet}). A standalone broker answers with
 * itself as the only broker, owning every streamlet with one copy at leader epoch 0 (and as the
 * controller).
 *
 * @param brokerId the id of the broker that answered
 * @param controllerId the broker elected controller (it makes creates and deletes, which any broker
 *     forwards to it), or {@link #NO_CONTROLLER} while none is
 */
public record ClusterMetadata(
        int brokerId, List<BrokerInfo> brokers, List<StreamPlacement> streams, int controllerId) {

    /** {@link #controllerId()} while no controller is elected (the wire's 0xFFFFFFFF). */
    public static final int NO_CONTROLLER = -1;

    public ClusterMetadata {
        brokers = List.copyOf(brokers);
        streams = List.copyOf(streams);
    }

    /** The registered broker with this id, if any. */
    public Optional<BrokerInfo> broker(int id) {
        for (BrokerInfo b : brokers) {
            if (b.id() == id) {
                return Optional.of(b);
            }
        }
        return Optional.empty();
    }

    /** The placement of {@code stream}, if it was asked for and exists. */
    public Optional<StreamPlacement> placement(String stream) {
        for (StreamPlacement p : streams) {
            if (p.name().equals(stream)) {
                return Optional.of(p);
            }
        }
        return Optional.empty();
    }

    /** The broker that answered, if it is registered (it always is in a broker's own answer). */
    public Optional<BrokerInfo> answeringBroker() {
        return broker(brokerId);
    }
}
