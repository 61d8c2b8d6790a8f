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
import java.util.function.Function;
import org.apache.flink.annotation.Internal;

/**
 * The enumerator's view of the push election (docs/flink-connector.md, "Push mode"): on which host
 * and in which TaskManager JVM (election scope, from its {@link ReaderStartedEvent}) every reader
 * runs and which readers hold pushed splits of which broker (restored, or assigned by this
 * enumerator). A push group is a host and a broker: per group, the JVM of the lowest holder of that
 * broker's splits on that host when the group is first told holds the group's one push
 * subscription, and keeps it while that reader lives; every reader learns, for each broker its host
 * pushes from, the group's holders and whether its own JVM holds the subscription or which subtask
 * to ask for its ring ({@link PushPeersEvent}).
 *
 * <p>Coordinator thread only.
 */
@Internal
final class PushPeerTracker {

    /** A host's push group of one broker. */
    private record Group(String host, int broker) {}

    /** A pushed split's holder, and the broker it is pushed from. */
    private record Holder(int subtask, int broker) {}

    /** A reader's last word about one broker. */
    private record Sent(int subtask, int broker) {}

    private final Map<Integer, String> hostOf = new HashMap<>();
    private final Map<Integer, String> scopeOf = new HashMap<>();
    private final Map<Integer, Set<Integer>> restoredBrokersOf = new HashMap<>();
    private final Map<Integer, Holder> holderOfStreamlet = new HashMap<>();
    private final Map<Sent, PushPeersEvent> lastSent = new HashMap<>();

    /**
     * The subtask whose JVM holds each group's subscription, once chosen: kept while that reader
     * lives, so that readers told at different times (restored readers start one by one, and a
     * reader that joined its group stays there) never hear of different holders.
     */
    private final Map<Group, Integer> leaderOfGroup = new HashMap<>();

    /**
     * A (new attempt of a) reader registered on {@code host}: what its previous attempt said no
     * longer holds.
     */
    void readerRegistered(int subtask, String host) {
        leaderOfGroup.values().removeIf(leader -> leader == subtask); // its groups are gone
        hostOf.put(subtask, host);
        scopeOf.remove(subtask);
        restoredBrokersOf.remove(subtask);
        lastSent.keySet().removeIf(sent -> sent.subtask() == subtask);
    }

    void readerStarted(int subtask, ReaderStartedEvent event) {
        scopeOf.put(subtask, event.electionScope());
        restoredBrokersOf.put(subtask, event.restoredPushBrokers());
    }

    boolean started(int subtask) {
        return scopeOf.containsKey(subtask);
    }

    /** {@code owner} holds {@code streamlet}, which it pushes from {@code broker}. */
    void splitAssigned(int streamlet, int owner, int broker) {
        holderOfStreamlet.put(streamlet, new Holder(owner, broker));
    }

    void splitReturned(int streamlet) {
        holderOfStreamlet.remove(streamlet);
    }

    /** The group's leader: the one chosen before while it still holds splits, else the lowest. */
    private int leader(Group group, TreeSet<Integer> holders) {
        Integer chosen = leaderOfGroup.get(group);
        if (chosen == null || !holders.contains(chosen)) {
            chosen = holders.first();
            leaderOfGroup.put(group, chosen);
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
     * For every started reader and every broker its host pushes from ({@code pushBrokersOfHost}),
     * when the word changed since the reader was last told: the group's sorted holders that are
     * still registered (a reader that finished cannot hold a subscription for others), and where
     * their subscription lives.
     */
    List<Map.Entry<Integer, PushPeersEvent>> changedPeers(
            Set<Integer> registered, Function<String, List<Integer>> pushBrokersOfHost) {
        Map<Group, TreeSet<Integer>> holdersByGroup = holdersByGroup(registered);
        List<Map.Entry<Integer, PushPeersEvent>> changed = new ArrayList<>();
        for (Map.Entry<Integer, String> reader : new TreeMap<>(scopeOf).entrySet()) {
            int subtask = reader.getKey();
            if (!registered.contains(subtask)) {
                continue; // failed and not back yet: it cannot take events, its next attempt asks
            }
            String host = hostOf.getOrDefault(subtask, "");
            for (int broker : pushBrokersOfHost.apply(host)) {
                Group group = new Group(host, broker);
                TreeSet<Integer> peers = holdersByGroup.get(group);
                PushPeersEvent event;
                if (peers == null) {
                    event =
                            new PushPeersEvent(
                                    broker, List.of(), PushPeersEvent.HOLDS_SUBSCRIPTION);
                } else {
                    int leader = leader(group, peers);
                    boolean sameJvm = Objects.equals(scopeOf.get(leader), reader.getValue());
                    event =
                            new PushPeersEvent(
                                    broker,
                                    new ArrayList<>(peers),
                                    sameJvm ? PushPeersEvent.HOLDS_SUBSCRIPTION : leader);
                }
                Sent key = new Sent(subtask, broker);
                if (!event.equals(lastSent.get(key))) {
                    lastSent.put(key, event);
                    changed.add(Map.entry(subtask, event));
                }
            }
        }
        return changed;
    }

    /** The started, registered holders of pushed splits, by host and broker. */
    private Map<Group, TreeSet<Integer>> holdersByGroup(Set<Integer> registered) {
        Set<Holder> holders = new HashSet<>(holderOfStreamlet.values());
        restoredBrokersOf.forEach(
                (subtask, brokers) -> brokers.forEach(b -> holders.add(new Holder(subtask, b))));
        Map<Group, TreeSet<Integer>> byGroup = new HashMap<>();
        for (Holder h : holders) {
            if (scopeOf.containsKey(h.subtask()) && registered.contains(h.subtask())) {
                String host = hostOf.getOrDefault(h.subtask(), "");
                byGroup.computeIfAbsent(new Group(host, h.broker()), g -> new TreeSet<>())
                        .add(h.subtask());
            }
        }
        return byGroup;
    }
}
