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
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.flink.annotation.Internal;

/**
 * The enumerator's view of the push election (docs/flink-connector.md, "Push mode"): on which host
 * and in which TaskManager JVM (election scope, from its {@link ReaderStartedEvent}) every reader
 * runs and which readers hold splits (restored, or assigned by this enumerator). Per host, the JVM
 * of the lowest split-holding subtask when the host is first told holds the host's one push
 * subscription, and keeps it while that reader lives; every reader learns the host's split holders
 * and whether its own JVM holds the subscription or which subtask to ask for its ring ({@link
 * PushPeersEvent}).
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
     * The subtask whose JVM holds each host's subscription, once chosen: kept while that reader
     * lives, so that readers told at different times (restored readers start one by one, and a
     * reader that joined its group stays there) never hear of different holders.
     */
    private final Map<String, Integer> holderOfHost = new HashMap<>();

    /**
     * A (new attempt of a) reader registered on {@code host}: what its previous attempt said no
     * longer holds.
     */
    void readerRegistered(int subtask, String host) {
        holderOfHost.values().remove(subtask); // a new attempt: its group is gone
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

    /** The host's holder: the one chosen before while it still holds splits, else the lowest. */
    private int holder(String host, TreeSet<Integer> holders) {
        Integer chosen = holderOfHost.get(host);
        if (chosen == null || !holders.contains(chosen)) {
            chosen = holders.first();
            holderOfHost.put(host, chosen);
        }
        return chosen;
    }

    /**
     * A registered reader in the JVM of {@code subtask} ({@code subtask} itself while it is
     * registered), or -1 when none is.
     */
    int liveReaderOfJvm(int subtask, Set<Integer> registered) {
        if (registered.contains(subtask)) {
            return subtask;
        }
        String scope = scopeOf.get(subtask);
        if (scope != null) {
            for (Map.Entry<Integer, String> reader : new TreeMap<>(scopeOf).entrySet()) {
                if (scope.equals(reader.getValue()) && registered.contains(reader.getKey())) {
                    return reader.getKey();
                }
            }
        }
        return -1;
    }

    /**
     * For every started reader whose word changed since it was last told: the sorted split holders
     * of its host that are still registered (a reader that finished cannot hold a subscription for
     * others), and where their subscription lives.
     */
    Map<Integer, PushPeersEvent> changedPeers(Set<Integer> registered) {
        Map<String, TreeSet<Integer>> holdersByHost = holdersByHost(registered);
        Map<Integer, PushPeersEvent> changed = new HashMap<>();
        for (Map.Entry<Integer, String> reader : scopeOf.entrySet()) {
            int subtask = reader.getKey();
            if (!registered.contains(subtask)) {
                continue; // failed and not back yet: it cannot take events, its next attempt asks
            }
            String host = hostOf.getOrDefault(subtask, "");
            TreeSet<Integer> peers = holdersByHost.get(host);
            PushPeersEvent event;
            if (peers == null) {
                event = new PushPeersEvent(List.of(), PushPeersEvent.HOLDS_SUBSCRIPTION);
            } else {
                int leader = holder(host, peers);
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

    /** The started, registered split holders, by host. */
    private Map<String, TreeSet<Integer>> holdersByHost(Set<Integer> registered) {
        Set<Integer> holders = new HashSet<>(restoredSplitHolders);
        holders.addAll(ownerOfStreamlet.values());
        Map<String, TreeSet<Integer>> byHost = new HashMap<>();
        for (int subtask : holders) {
            if (scopeOf.containsKey(subtask) && registered.contains(subtask)) {
                String host = hostOf.getOrDefault(subtask, "");
                byHost.computeIfAbsent(host, h -> new TreeSet<>()).add(subtask);
            }
        }
        return byHost;
    }
}
