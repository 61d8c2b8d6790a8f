package io.nearstream.client;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Keeps a {@link ClusterView} up to date: asks a broker for ClusterMetadata, trying the brokers in
 * turn until one answers, and remembers that broker as the <em>home</em> broker, which also takes
 * the requests any broker can answer (CreateStream, ListStreams, Stats …).
 *
 * <p>Brokers are tried in this order: the home broker; the other registered brokers; the bootstrap
 * addresses that are not registered addresses; last the brokers whose connection failed lately (so
 * a dead broker, which may cost a connect timeout, is not asked first). Concurrent refreshes of the
 * same streams share one request: a burst of NOT_OWNER answers costs one ClusterMetadata.
 */
final class ClusterRefresher implements StreamletRouter.Refresher {

    /** The broker that answered ClusterMetadata last, and its client. */
    record Home(BrokerInfo broker, NearstreamClient client) {}

    /** A broker to ask: a registered one, or a bootstrap address ({@code broker} null). */
    private record Candidate(BrokerInfo broker, String address) {
        String describe() {
            return broker != null ? broker.describe() : address;
        }
    }

    private final ClusterView view;
    private final BrokerConnections connections;
    private final List<String> bootstrap;
    private final Set<Integer> suspects = ConcurrentHashMap.newKeySet();
    private final Map<String, CompletableFuture<ClusterMetadata>> inFlight =
            new ConcurrentHashMap<>();
    private volatile Home home;

    ClusterRefresher(ClusterView view, BrokerConnections connections, List<String> bootstrap) {
        this.view = view;
        this.connections = connections;
        this.bootstrap = List.copyOf(bootstrap);
    }

    /**
     * Asks a broker for the placement of {@code streams} (every stream when empty) and the broker
     * list, and updates the view. Fails with IO_ERROR naming every broker tried when none answers.
     *
     * @param afterRefusal take the answer's placements whatever their version
     */
    CompletableFuture<ClusterMetadata> fetch(List<String> streams, boolean afterRefusal) {
        String key = (afterRefusal ? "!" : "") + String.join("\n", streams);
        CompletableFuture<ClusterMetadata> mine = new CompletableFuture<>();
        CompletableFuture<ClusterMetadata> running = inFlight.putIfAbsent(key, mine);
        if (running != null) {
            return running;
        }
        ask(candidates(), 0, streams, afterRefusal, new ArrayList<>())
                .whenComplete(
                        (m, err) -> {
                            inFlight.remove(key, mine);
                            if (err != null) {
                                mine.completeExceptionally(StreamletRouter.asClientException(err));
                            } else {
                                mine.complete(m);
                            }
                        });
        return mine;
    }

    @Override
    public CompletableFuture<ClusterMetadata> lookUp(String stream) {
        return fetch(List.of(stream), false);
    }

    @Override
    public CompletableFuture<Void> refresh(String stream, boolean afterRefusal) {
        // A failed refresh leaves the view as it was: the request that wanted it goes on with it.
        return fetch(List.of(stream), afterRefusal).handle((m, err) -> null);
    }

    @Override
    public void connectionFailed(BrokerInfo broker) {
        suspects.add(broker.id());
        Home h = home;
        if (h != null && h.broker().id() == broker.id()) {
            home = null;
        }
    }

    /**
     * The home broker, found with a refresh of {@code stream}'s placement (of every stream when
     * null) when there is none.
     */
    CompletableFuture<Home> home(String stream) {
        Home h = home;
        if (h != null) {
            return CompletableFuture.completedFuture(h);
        }
        return fetch(stream == null ? List.of() : List.of(stream), false)
                .thenApply(
                        m -> {
                            Home found = home;
                            if (found == null) {
                                throw new NearstreamClientException(
                                        StatusCode.IO_ERROR, "no broker of the cluster answers");
                            }
                            return found;
                        });
    }

    private List<Candidate> candidates() {
        List<Candidate> first = new ArrayList<>();
        List<Candidate> last = new ArrayList<>();
        Set<Integer> ids = new HashSet<>();
        Set<String> addresses = new HashSet<>();
        Home h = home;
        if (h != null) {
            first.add(new Candidate(h.broker(), h.broker().address()));
            ids.add(h.broker().id());
            addresses.add(h.broker().address());
        }
        for (BrokerInfo b : view.brokers()) {
            if (ids.add(b.id())) {
                addresses.add(b.address());
                (suspects.contains(b.id()) ? last : first).add(new Candidate(b, b.address()));
            }
        }
        for (String address : bootstrap) {
            if (addresses.add(address)) {
                first.add(new Candidate(null, address));
            }
        }
        first.addAll(last);
        return first;
    }

    private CompletableFuture<ClusterMetadata> ask(
            List<Candidate> candidates,
            int next,
            List<String> streams,
            boolean afterRefusal,
            List<String> failures) {
        if (next == candidates.size()) {
            return CompletableFuture.failedFuture(
                    new NearstreamClientException(
                            StatusCode.IO_ERROR,
                            "no broker answered ClusterMetadata: " + String.join("; ", failures)));
        }
        Candidate c = candidates.get(next);
        NearstreamClient client;
        CompletableFuture<ClusterMetadata> answer;
        try {
            client =
                    c.broker() != null
                            ? connections.forBroker(c.broker())
                            : connections.open(c.address());
            answer = client.clusterMetadata(streams.toArray(new String[0]));
        } catch (RuntimeException e) {
            client = null;
            answer = CompletableFuture.failedFuture(e);
        }
        NearstreamClient asked = client;
        return answer.handle(
                        (m, err) -> {
                            if (err == null) {
                                answeredBy(c, asked, m, streams, afterRefusal);
                                return CompletableFuture.completedFuture(m);
                            }
                            NearstreamClientException e = StreamletRouter.asClientException(err);
                            if (c.broker() != null) {
                                if (e.status() == StatusCode.IO_ERROR) {
                                    connectionFailed(c.broker());
                                }
                            } else if (asked != null) {
                                asked.close();
                            }
                            failures.add(c.describe() + ": " + e.getMessage());
                            return ask(candidates, next + 1, streams, afterRefusal, failures);
                        })
                .thenCompose(f -> f);
    }

    private void answeredBy(
            Candidate c,
            NearstreamClient client,
            ClusterMetadata m,
            List<String> streams,
            boolean afterRefusal) {
        view.update(m, streams, afterRefusal);
        // A broker lists itself; should it not (a broker just cut off from ZooKeeper), it is
        // still the one at the address just asked.
        BrokerInfo broker =
                m.answeringBroker()
                        .orElse(
                                c.broker() != null
                                        ? c.broker()
                                        : new BrokerInfo(m.brokerId(), c.address(), ""));
        NearstreamClient kept = c.broker() != null ? client : connections.adopt(broker, client);
        if (c.broker() != null && c.broker().id() != broker.id()) {
            kept = connections.forBroker(broker);
        }
        suspects.remove(broker.id());
        home = new Home(broker, kept);
    }
}
