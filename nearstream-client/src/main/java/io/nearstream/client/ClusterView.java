package io.nearstream.client;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * A {@link NearstreamClusterClient}'s cached copy of the cluster: the registered brokers and the
 * placement of the streams it has asked about. Readers see one consistent snapshot (an immutable
 * state swapped whole); updates come from ClusterMetadata answers.
 *
 * <p>Placements keep the highest version (docs/protocol.md: brokers learn of placement changes from
 * ZooKeeper at slightly different times, so a lagging broker may answer an older one), except when
 * a broker has just refused a request with NOT_OWNER: then the answer is taken whatever its
 * version, so a stream deleted and created again (whose version may restart) cannot leave a stale
 * placement behind for good.
 */
final class ClusterView {

    /** What the view holds at one moment; never modified. */
    private record State(
            int answeredBy,
            Map<Integer, BrokerInfo> brokers,
            Map<String, StreamPlacement> streams,
            int controllerId) {}

    private volatile State state = new State(-1, Map.of(), Map.of(), ClusterMetadata.NO_CONTROLLER);

    /**
     * Takes in a ClusterMetadata answer to a request for {@code asked} (empty: every stream).
     *
     * @param overrideVersions take the answer's placements even where the cached one is newer
     */
    synchronized void update(ClusterMetadata answer, List<String> asked, boolean overrideVersions) {
        State old = state;
        Map<Integer, BrokerInfo> brokers = new LinkedHashMap<>();
        for (BrokerInfo b : answer.brokers()) {
            brokers.put(b.id(), b);
        }
        Map<String, StreamPlacement> streams = new HashMap<>(old.streams);
        if (asked.isEmpty()) {
            // Every stream was asked for: those not in the answer no longer exist.
            streams.keySet().retainAll(names(answer.streams()));
        } else {
            for (String name : asked) {
                if (answer.placement(name).isEmpty()) {
                    streams.remove(name);
                }
            }
        }
        for (StreamPlacement fresh : answer.streams()) {
            StreamPlacement cached = streams.get(fresh.name());
            if (cached == null || overrideVersions || !cached.isNewerThan(fresh)) {
                streams.put(fresh.name(), fresh);
            }
        }
        state =
                new State(
                        answer.brokerId(),
                        Collections.unmodifiableMap(brokers),
                        Collections.unmodifiableMap(streams),
                        answer.controllerId());
    }

    private static List<String> names(List<StreamPlacement> placements) {
        List<String> names = new ArrayList<>(placements.size());
        for (StreamPlacement p : placements) {
            names.add(p.name());
        }
        return names;
    }

    /** Drops a stream's placement (it was deleted, or a broker no longer knows it). */
    synchronized void forget(String stream) {
        State old = state;
        if (old.streams.containsKey(stream)) {
            Map<String, StreamPlacement> streams = new HashMap<>(old.streams);
            streams.remove(stream);
            state =
                    new State(
                            old.answeredBy,
                            old.brokers,
                            Collections.unmodifiableMap(streams),
                            old.controllerId);
        }
    }

    Optional<StreamPlacement> placement(String stream) {
        return Optional.ofNullable(state.streams.get(stream));
    }

    /** The registered broker with this id, if any. */
    Optional<BrokerInfo> broker(int id) {
        return Optional.ofNullable(state.brokers.get(id));
    }

    /** The registered brokers, ascending id (as the last answer listed them). */
    List<BrokerInfo> brokers() {
        return List.copyOf(state.brokers.values());
    }

    /**
     * The view as a {@link ClusterMetadata}: the last answering broker's id, the brokers, the
     * controller it named, and the placements of {@code streams} that the view holds (every one,
     * sorted by name, when none is given, as a broker sorts them).
     */
    ClusterMetadata snapshot(List<String> streams) {
        State s = state;
        List<StreamPlacement> placements = new ArrayList<>();
        if (streams.isEmpty()) {
            placements.addAll(new TreeMap<>(s.streams).values());
        } else {
            for (String name : streams) {
                StreamPlacement p = s.streams.get(name);
                if (p != null) {
                    placements.add(p);
                }
            }
        }
        return new ClusterMetadata(
                s.answeredBy, List.copyOf(s.brokers.values()), placements, s.controllerId);
    }
}
