package io.nearstream.flink.source.enumerator;

import io.nearstream.flink.source.event.PushPeersEvent;
import io.nearstream.flink.source.event.ReaderStartedEvent;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import org.apache.flink.annotation.Internal;

/**
 * The enumerator's view of the push election (docs/flink-connector.md, "Push mode"): on which host
 * and in which TaskManager JVM (election scope, from its {@link ReaderStartedEvent}) every reader
 * runs and which readers hold splits (restored, or assigned by this enumerator). Per host, the
 * lowest split-holding subtask's JVM holds the host's one push subscription; every reader learns
 * the host's split holders and whether its own JVM holds the subscription or which subtask to ask
 * for its ring ({@link PushPeersEvent}).
 *
 * <p>Coordinator thread only.
 */
@Internal
final class PushPeerTracker {

    private final Map<Integer, String> hostOf = new HashMap<>();
    private final Map<Integer, String> scopeOf = new HashMap<>();
    private final Set<Integer> restoredSplitHolders = new HashSet<>();
    private final Map<Integer, Integer> ownerOfStreamlet = new HashMap<>();
    private final Map<Integer, PushPeersEvent> lastSent = new HashMap<>();

    /**
     * A (new attempt of a) reader registered on {@code host}: what its previous attempt said no
     * longer holds.
     */
    void readerRegistered(int subtask, String host) {
        hostOf.put(subtask, host);
        scopeOf.remove(subtask);
        restoredSplitHolders.remove(subtask);
        lastSent.remove(subtask);
    }

    void readerStarted(int subtask, ReaderStartedEvent event) {
        scopeOf.put(subtask, event.electionScope());
        if (event.holdsRestoredSplits()) {
            restoredSplitHolders.add(subtask);
        } else {
            restoredSplitHolders.remove(subtask);
        }
    }

    boolean started(int subtask) {
        return scopeOf.containsKey(subtask);
    }

    void splitAssigned(int streamlet, int owner) {
        ownerOfStreamlet.put(streamlet, owner);
    }

    void splitReturned(int streamlet) {
        ownerOfStreamlet.remove(streamlet);
    }

    /**
     * The reader holding the subscription of {@code subtask}'s host now: the host's lowest
     * split-holding started subtask, or -1 when there is none.
     */
    int leaderFor(int subtask) {
        TreeSet<Integer> holders = holdersByHost().get(hostOf.getOrDefault(subtask, ""));
        return holders == null ? -1 : holders.first();
    }

    /**
     * For every started reader whose word changed since it was last told: the sorted split holders
     * of its host, and where their subscription lives.
     */
    Map<Integer, PushPeersEvent> changedPeers() {
        Map<String, TreeSet<Integer>> holdersByHost = holdersByHost();
        Map<Integer, PushPeersEvent> changed = new HashMap<>();
        for (Map.Entry<Integer, String> reader : scopeOf.entrySet()) {
            int subtask = reader.getKey();
            TreeSet<Integer> peers = holdersByHost.get(hostOf.getOrDefault(subtask, ""));
            PushPeersEvent event;
            if (peers == null) {
                event = new PushPeersEvent(List.of(), PushPeersEvent.HOLDS_SUBSCRIPTION);
            } else {
                int leader = peers.first();
                boolean sameJvm = Objects.equals(scopeOf.get(leader), reader.getValue());
                event =
                        new PushPeersEvent(
                                new ArrayList<>(peers),
                                sameJvm ? PushPeersEvent.HOLDS_SUBSCRIPTION : leader);
            }
            if (!event.equals(lastSent.get(subtask))) {
                lastSent.put(subtask, event);
                changed.put(subtask, event);
            }
        }
        return changed;
    }

    /** The started split holders, by host. */
    private Map<String, TreeSet<Integer>> holdersByHost() {
        Set<Integer> holders = new HashSet<>(restoredSplitHolders);
        holders.addAll(ownerOfStreamlet.values());
        Map<String, TreeSet<Integer>> byHost = new HashMap<>();
        for (int subtask : holders) {
            if (scopeOf.containsKey(subtask)) {
                String host = hostOf.getOrDefault(subtask, "");
                byHost.computeIfAbsent(host, h -> new TreeSet<>()).add(subtask);
            }
        }
        return byHost;
    }
}
