package io.nearstream.flink.source.enumerator;

import io.nearstream.flink.source.event.PushPeersEvent;
import io.nearstream.flink.source.event.ReaderStartedEvent;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.flink.annotation.Internal;

/**
 * The enumerator's view of the push election scopes (docs/flink-connector.md, "Push mode"): which
 * readers share a scope (from their {@link ReaderStartedEvent}) and which of them hold splits
 * (restored, or assigned by this enumerator), so that every reader learns the peers its push group
 * must wait for ({@link PushPeersEvent}) before the group subscribes.
 *
 * <p>Coordinator thread only.
 */
@Internal
final class PushPeerTracker {

    private final Map<Integer, String> scopeOf = new HashMap<>();
    private final Set<Integer> restoredSplitHolders = new HashSet<>();
    private final Map<Integer, Integer> ownerOfStreamlet = new HashMap<>();
    private final Map<Integer, List<Integer>> lastSent = new HashMap<>();

    /** A (new attempt of a) reader registered: what its previous attempt said no longer holds. */
    void readerRegistered(int subtask) {
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
     * For every started reader whose peers changed since it was last told: the sorted subtasks of
     * its scope that hold splits.
     */
    Map<Integer, List<Integer>> changedPeers() {
        Set<Integer> holders = new HashSet<>(restoredSplitHolders);
        holders.addAll(ownerOfStreamlet.values());
        Map<String, TreeSet<Integer>> holdersByScope = new HashMap<>();
        for (int subtask : holders) {
            String scope = scopeOf.get(subtask);
            if (scope != null) {
                holdersByScope.computeIfAbsent(scope, s -> new TreeSet<>()).add(subtask);
            }
        }
        Map<Integer, List<Integer>> changed = new HashMap<>();
        for (Map.Entry<Integer, String> reader : scopeOf.entrySet()) {
            TreeSet<Integer> peers = holdersByScope.get(reader.getValue());
            List<Integer> list = peers == null ? List.of() : new ArrayList<>(peers);
            if (!list.equals(lastSent.get(reader.getKey()))) {
                lastSent.put(reader.getKey(), list);
                changed.put(reader.getKey(), list);
            }
        }
        return changed;
    }
}
