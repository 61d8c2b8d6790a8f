package io.nearstream.client;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Brokers of a pretend cluster for {@link NearstreamClusterClient} tests, each behind the {@link
 * NearstreamClient} interface, with the cluster rules of docs/protocol.md: a placement per stream,
 * NOT_OWNER (naming the owner) or BROKER_UNAVAILABLE per entry for streamlets a broker does not
 * own, whole-request refusals for Metadata and PushSubscribe, ClusterMetadata from any broker. A
 * replicated stream ({@link #placeReplicated}) takes transaction requests in streamlet scopes only,
 * each on the streamlet's leader. The test changes the placement, unregisters brokers or takes them
 * down behind the client's back. A broker with {@link Broker#followerReads} serves replica-read
 * fetches of the streamlets it follows in sync, at the leader's positions, as {@code nearstreamd
 * --follower-reads} does. Every request a broker gets is logged ({@link Broker#calls()}).
 */
final class FakeCluster implements AutoCloseable {

    private final Map<Integer, Broker> brokers = new ConcurrentHashMap<>();
    private final Set<Integer> registered = ConcurrentHashMap.newKeySet();
    private final Map<String, StreamPlacement> placements = new ConcurrentHashMap<>();
    private final Map<String, List<byte[]>> data = new ConcurrentHashMap<>();
    private final AtomicInteger openResponses = new AtomicInteger();
    private final AtomicLong subscriptionIds = new AtomicLong(100);
    private final ScheduledExecutorService timer =
            Executors.newSingleThreadScheduledExecutor(
                    r -> {
                        Thread t = new Thread(r, "fake-cluster-timer");
                        t.setDaemon(true);
                        return t;
                    });

    /** Adds a registered broker at {@code address}. */
    Broker add(int id, String address) {
        Broker b = new Broker(id, address);
        brokers.put(id, b);
        registered.add(id);
        return b;
    }

    Broker broker(int id) {
        return brokers.get(id);
    }

    /** Places {@code stream}: streamlet {@code i} on broker {@code owners[i]}. */
    void place(String stream, int version, Integer... owners) {
        placements.put(stream, new StreamPlacement(stream, version, List.of(owners)));
    }

    /**
     * Places {@code stream} with two copies per streamlet: streamlet {@code i} led by broker {@code
     * leaders[i]}, followed by the next broker id (wrapping), at leader epoch {@code version}.
     */
    void placeReplicated(String stream, int version, Integer... leaders) {
        List<Integer> ids = new ArrayList<>(new TreeMap<>(brokers).keySet());
        List<ReplicaSet> sets = new ArrayList<>();
        for (int leader : leaders) {
            int follower = ids.get((ids.indexOf(leader) + 1) % ids.size());
            sets.add(new ReplicaSet(version, List.of(leader, follower), List.of(leader, follower)));
        }
        placements.put(stream, new StreamPlacement(stream, version, List.of(leaders), sets));
    }

    /**
     * Places {@code stream} with the given copies: streamlet {@code i} led by {@code leaders[i]},
     * its replicas and in-sync set {@code sets[i]}'s.
     */
    void placeReplicas(String stream, int version, List<Integer> leaders, List<ReplicaSet> sets) {
        placements.put(stream, new StreamPlacement(stream, version, leaders, sets));
    }

    void unregister(int id) {
        registered.remove(id);
    }

    /** Fetch responses handed out and not closed yet. */
    int openResponses() {
        return openResponses.get();
    }

    /** What a client connection factory returns: the broker at an address (or an unknown one). */
    NearstreamClient open(String address) {
        for (Broker b : brokers.values()) {
            if (b.address.equals(address)) {
                return b;
            }
        }
        Broker nobody = new Broker(-1, address);
        nobody.down = true;
        return nobody;
    }

    ClusterMetadata metadata(int answeringId, String... streams) {
        List<BrokerInfo> infos = new ArrayList<>();
        for (int id : new TreeMap<>(brokers).keySet()) {
            if (registered.contains(id)) {
                Broker b = brokers.get(id);
                infos.add(new BrokerInfo(id, b.address, "host-" + id));
            }
        }
        List<String> names = new ArrayList<>(List.of(streams));
        if (names.isEmpty()) {
            names.addAll(placements.keySet());
            Collections.sort(names);
        }
        List<StreamPlacement> out = new ArrayList<>();
        for (String name : names) {
            StreamPlacement p = placements.get(name);
            if (p != null) {
                out.add(p);
            }
        }
        // The lowest registered id plays the controller (the fake makes no placement changes).
        int controller = infos.isEmpty() ? ClusterMetadata.NO_CONTROLLER : infos.get(0).id();
        return new ClusterMetadata(answeringId, infos, out, controller);
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }

    /** One broker. */
    final class Broker implements NearstreamClient {
        final int id;
        final String address;
        private final List<String> calls = new CopyOnWriteArrayList<>();
        private final List<Poll> polls = new ArrayList<>();
        volatile boolean down;

        /** Serves replica reads of the streamlets it follows in sync ({@code --follower-reads}). */
        volatile boolean followerReads;

        /** Streamlets this broker refuses as broker 1's although it owns them (a stale broker). */
        final Set<Integer> disowned = ConcurrentHashMap.newKeySet();

        Broker(int id, String address) {
            this.id = id;
            this.address = address;
        }

        /** The requests so far, e.g. {@code "append s [0, 2]"}. */
        List<String> calls() {
            return List.copyOf(calls);
        }

        /** The logged requests that start with {@code prefix}. */
        List<String> calls(String prefix) {
            List<String> out = new ArrayList<>();
            for (String c : calls) {
                if (c.startsWith(prefix)) {
                    out.add(c);
                }
            }
            return out;
        }

        /** Null when this broker stores the streamlet; else the refusal. */
        private AppendResult refusal(String stream, int streamlet) {
            return refusal(stream, streamlet, false);
        }

        /**
         * Null when this broker stores the streamlet, or serves it from its in-sync copy to a
         * replica read; else the refusal.
         */
        private AppendResult refusal(String stream, int streamlet, boolean replicaRead) {
            StreamPlacement p = placements.get(stream);
            int owner = disowned.contains(streamlet) ? 1 : p.owner(streamlet);
            if (owner == id) {
                return null;
            }
            if (replicaRead && followerReads && p.replicaSet(streamlet).isInSync(id)) {
                return null;
            }
            if (!registered.contains(owner)) {
                return new AppendResult(
                        streamlet,
                        StatusCode.BROKER_UNAVAILABLE,
                        "streamlet " + streamlet + " is stored by broker " + owner,
                        Position.EARLIEST,
                        false);
            }
            return new AppendResult(
                    streamlet,
                    StatusCode.NOT_OWNER,
                    "streamlet "
                            + streamlet
                            + " of stream '"
                            + stream
                            + "' is stored by broker "
                            + owner
                            + " at "
                            + brokers.get(owner).address,
                    Position.EARLIEST,
                    false);
        }

        private <T> CompletableFuture<T> check(String stream, String call) {
            calls.add(call);
            if (down) {
                return failed(StatusCode.IO_ERROR, "cannot connect to " + address);
            }
            if (stream != null && !placements.containsKey(stream)) {
                return failed(
                        StatusCode.STREAM_NOT_FOUND, "stream '" + stream + "' does not exist");
            }
            return null;
        }

        @Override
        public String address() {
            return address;
        }

        @Override
        public CompletableFuture<Long> handshake(String clientName) {
            CompletableFuture<Long> f = check(null, "handshake");
            return f != null ? f : CompletableFuture.completedFuture((long) id);
        }

        @Override
        public CompletableFuture<Void> createStream(StreamConfig config) {
            CompletableFuture<Void> f = check(null, "create " + config.name());
            if (f != null) {
                return f;
            }
            List<Integer> ids = new ArrayList<>(new TreeMap<>(brokers).keySet());
            ids.retainAll(registered);
            Integer[] owners = new Integer[config.streamlets()];
            for (int i = 0; i < owners.length; i++) {
                owners[i] = ids.get(i % ids.size());
            }
            place(config.name(), 1, owners);
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletableFuture<Void> deleteStream(String name) {
            CompletableFuture<Void> f = check(name, "delete " + name);
            if (f != null) {
                return f;
            }
            placements.remove(name);
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletableFuture<StreamConfig> describeStream(String name) {
            CompletableFuture<StreamConfig> f = check(name, "describe " + name);
            return f != null
                    ? f
                    : CompletableFuture.completedFuture(
                            StreamConfig.of(name, placements.get(name).streamlets()));
        }

        @Override
        public CompletableFuture<List<String>> listStreams() {
            CompletableFuture<List<String>> f = check(null, "list");
            if (f != null) {
                return f;
            }
            List<String> names = new ArrayList<>(placements.keySet());
            Collections.sort(names);
            return CompletableFuture.completedFuture(names);
        }

        @Override
        public CompletableFuture<List<StreamletMetadata>> metadata(
                String stream, int... streamlets) {
            CompletableFuture<List<StreamletMetadata>> f =
                    check(stream, "metadata " + stream + " " + Arrays.toString(streamlets));
            if (f != null) {
                return f;
            }
            List<StreamletMetadata> out = new ArrayList<>();
            for (int s : streamlets) {
                AppendResult refused = refusal(stream, s);
                if (refused != null) {
                    return failed(refused.status(), refused.message());
                }
                Position tail = new Position(1, 1, 1000 * id + s);
                out.add(new StreamletMetadata(s, Position.EARLIEST, tail, List.of()));
            }
            return CompletableFuture.completedFuture(out);
        }

        @Override
        public CompletableFuture<List<AppendResult>> append(
                String stream, int[] streamlets, List<byte[]> chunks) {
            CompletableFuture<List<AppendResult>> f =
                    check(stream, "append " + stream + " " + Arrays.toString(streamlets));
            if (f != null) {
                return f;
            }
            List<AppendResult> results = new ArrayList<>();
            List<Poll> woken = new ArrayList<>();
            for (int i = 0; i < streamlets.length; i++) {
                int s = streamlets[i];
                AppendResult refused = refusal(stream, s);
                if (refused != null) {
                    results.add(refused);
                    continue;
                }
                List<byte[]> stored =
                        data.computeIfAbsent(stream + "/" + s, k -> new CopyOnWriteArrayList<>());
                stored.add(chunks.get(i).clone());
                results.add(
                        new AppendResult(
                                s,
                                StatusCode.OK,
                                "",
                                new Position(id, s, stored.size() - 1),
                                false));
                synchronized (polls) {
                    for (Poll p : new ArrayList<>(polls)) {
                        if (p.stream.equals(stream) && p.wants(s)) {
                            polls.remove(p);
                            woken.add(p);
                        }
                    }
                }
            }
            for (Poll p : woken) {
                p.future.complete(read(stream, p.entries, p.replicaRead));
            }
            return CompletableFuture.completedFuture(results);
        }

        /**
         * Every chunk of a served streamlet from index {@code position.offset()} on, one block per
         * chunk ({@code at} = (leader, streamlet, index): the leader's positions on every copy).
         */
        private FetchResponse read(String stream, List<FetchEntry> entries, boolean replicaRead) {
            List<StreamletFetch> results = new ArrayList<>();
            for (FetchEntry e : entries) {
                AppendResult refused = refusal(stream, e.streamlet(), replicaRead);
                if (refused != null) {
                    results.add(
                            new StreamletFetch(
                                    e.streamlet(),
                                    refused.status(),
                                    refused.message(),
                                    e.position(),
                                    Position.EARLIEST,
                                    List.of()));
                    continue;
                }
                List<byte[]> stored = data.getOrDefault(stream + "/" + e.streamlet(), List.of());
                List<ChunkBlock> blocks = new ArrayList<>();
                int leader = placements.get(stream).owner(e.streamlet());
                int from = e.position().offset();
                for (int i = from; i < stored.size(); i++) {
                    blocks.add(
                            new ChunkBlock(
                                    new Position(leader, e.streamlet(), i),
                                    ByteBuffer.wrap(stored.get(i))
                                            .asReadOnlyBuffer()
                                            .order(ByteOrder.LITTLE_ENDIAN)));
                }
                Position tail = new Position(leader, e.streamlet(), stored.size());
                Position next = blocks.isEmpty() ? e.position() : tail;
                results.add(
                        new StreamletFetch(e.streamlet(), StatusCode.OK, "", next, tail, blocks));
            }
            openResponses.incrementAndGet();
            return new CountedResponse(results);
        }

        @Override
        public CompletableFuture<FetchResponse> fetch(
                String stream, int maxWaitMs, List<FetchEntry> entries) {
            return fetch(stream, maxWaitMs, entries, false);
        }

        /** Logged as a fetch, with {@code " replica-read"} after it when {@code replicaRead}. */
        @Override
        public CompletableFuture<FetchResponse> fetch(
                String stream, int maxWaitMs, List<FetchEntry> entries, boolean replicaRead) {
            List<Integer> asked = new ArrayList<>();
            entries.forEach(e -> asked.add(e.streamlet()));
            CompletableFuture<FetchResponse> f =
                    check(
                            stream,
                            "fetch "
                                    + stream
                                    + " wait "
                                    + maxWaitMs
                                    + " "
                                    + asked
                                    + (replicaRead ? " replica-read" : ""));
            if (f != null) {
                return f;
            }
            FetchResponse now = read(stream, entries, replicaRead);
            boolean news = false;
            for (StreamletFetch r : now.results()) {
                news |= !r.ok() || !r.blocks().isEmpty();
            }
            if (news || maxWaitMs == 0) {
                return CompletableFuture.completedFuture(now);
            }
            now.close();
            Poll p = new Poll(stream, List.copyOf(entries), replicaRead);
            synchronized (polls) {
                polls.add(p);
            }
            timer.schedule(
                    () -> {
                        boolean mine;
                        synchronized (polls) {
                            mine = polls.remove(p);
                        }
                        if (mine) {
                            p.future.complete(read(stream, p.entries, p.replicaRead));
                        }
                    },
                    maxWaitMs,
                    TimeUnit.MILLISECONDS);
            return p.future;
        }

        @Override
        public CompletableFuture<List<TimestampLookup>> lookupTimestamps(
                String stream, Map<Integer, Long> timestampsByStreamlet) {
            CompletableFuture<List<TimestampLookup>> f =
                    check(stream, "lookup " + stream + " " + timestampsByStreamlet.keySet());
            if (f != null) {
                return f;
            }
            List<TimestampLookup> out = new ArrayList<>();
            timestampsByStreamlet.forEach(
                    (s, ts) -> {
                        AppendResult refused = refusal(stream, s);
                        out.add(
                                refused != null
                                        ? new TimestampLookup(
                                                s,
                                                refused.status(),
                                                refused.message(),
                                                Position.EARLIEST)
                                        : new TimestampLookup(
                                                s, StatusCode.OK, "", new Position(id, s, 0)));
                    });
            return CompletableFuture.completedFuture(out);
        }

        @Override
        public CompletableFuture<ClusterMetadata> clusterMetadata(String... streams) {
            CompletableFuture<ClusterMetadata> f =
                    check(null, "clusterMetadata " + Arrays.toString(streams));
            return f != null
                    ? f
                    : CompletableFuture.completedFuture(FakeCluster.this.metadata(id, streams));
        }

        @Override
        public CompletableFuture<Map<String, Long>> stats() {
            CompletableFuture<Map<String, Long>> f = check(null, "stats");
            return f != null ? f : CompletableFuture.completedFuture(Map.of("broker", (long) id));
        }

        @Override
        public CompletableFuture<PushSubscription> pushSubscribe(
                String stream, List<PushRingSpec> rings, PushSubscribeOptions options) {
            List<Integer> streamlets = new ArrayList<>();
            rings.forEach(r -> r.splits().forEach(s -> streamlets.add(s.streamlet())));
            CompletableFuture<PushSubscription> f =
                    check(
                            stream,
                            "pushSubscribe "
                                    + stream
                                    + " "
                                    + streamlets
                                    + (options.filter().passesAll()
                                            ? ""
                                            : " filter " + options.filter().toSpec())
                                    + (options.slotFormat() == SlotFormat.BINARY
                                            ? ""
                                            : " format " + options.slotFormat().configText()));
            if (f != null) {
                return f;
            }
            for (int s : streamlets) {
                AppendResult refused = refusal(stream, s);
                if (refused != null) {
                    return failed(refused.status(), refused.message());
                }
            }
            return CompletableFuture.completedFuture(
                    new PushSubscription(
                            subscriptionIds.incrementAndGet(), id, "/dev/shm/fake-" + id, 4096));
        }

        @Override
        public CompletableFuture<Void> pushUpdate(long subscriptionId, List<PushRingSpec> rings) {
            CompletableFuture<Void> f = check(null, "pushUpdate " + subscriptionId);
            return f != null ? f : CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletableFuture<Void> pushClose(long subscriptionId) {
            CompletableFuture<Void> f = check(null, "pushClose " + subscriptionId);
            return f != null ? f : CompletableFuture.completedFuture(null);
        }

        /**
         * Transactions: in the broker scope this broker must own every streamlet of the stream, in
         * a streamlet scope lead that streamlet; a replicated stream has streamlet scopes only.
         */
        private <T> CompletableFuture<T> txn(String stream, int scope, String call, T value) {
            CompletableFuture<T> f = check(stream, call);
            if (f != null) {
                return f;
            }
            StreamPlacement p = placements.get(stream);
            if (p.replicated() != (scope != TxnRef.BROKER_SCOPE)) {
                return failed(
                        StatusCode.INVALID_ARGUMENT,
                        "stream '" + stream + "' does not have scope " + scope);
            }
            if (scope != TxnRef.BROKER_SCOPE) {
                if (!p.hasStreamlet(scope)) {
                    return failed(StatusCode.STREAMLET_NOT_FOUND, "no streamlet " + scope);
                }
                AppendResult refused = refusal(stream, scope);
                return refused != null
                        ? failed(refused.status(), refused.message())
                        : CompletableFuture.completedFuture(value);
            }
            for (int s = 0; s < p.streamlets(); s++) {
                AppendResult refused = refusal(stream, s);
                if (refused != null) {
                    return failed(refused.status(), refused.message());
                }
            }
            return CompletableFuture.completedFuture(value);
        }

        private static String scoped(int scope) {
            return scope == TxnRef.BROKER_SCOPE ? "" : " scope " + scope;
        }

        @Override
        public CompletableFuture<TxnInitResult> txnInit(
                String stream, String transactionalId, long keepPreparedThrough, int scope) {
            return txn(
                    stream, scope, "txnInit " + stream + scoped(scope), new TxnInitResult(id, 0));
        }

        @Override
        public CompletableFuture<TxnRef> txnBegin(TxnRef ref) {
            return txn(ref.stream(), ref.scope(), "txnBegin " + ref, ref.withSerial(1));
        }

        /**
         * In the broker scope an Append; in a streamlet scope, refused whole by a broker that does
         * not lead the streamlet, and every entry must name it.
         */
        @Override
        public CompletableFuture<List<AppendResult>> txnAppend(
                TxnRef ref, int[] streamlets, List<byte[]> chunks) {
            if (ref.scope() == TxnRef.BROKER_SCOPE) {
                return append(ref.stream(), streamlets, chunks);
            }
            CompletableFuture<List<AppendResult>> f =
                    txn(
                            ref.stream(),
                            ref.scope(),
                            "txnAppend " + ref + " " + Arrays.toString(streamlets),
                            null);
            if (f.isCompletedExceptionally()) {
                return f;
            }
            List<AppendResult> results = new ArrayList<>();
            for (int s : streamlets) {
                results.add(
                        s == ref.scope()
                                ? new AppendResult(s, StatusCode.OK, "", Position.EARLIEST, false)
                                : new AppendResult(
                                        s,
                                        StatusCode.INVALID_ARGUMENT,
                                        "streamlet " + s + " is outside scope " + ref.scope(),
                                        Position.EARLIEST,
                                        false));
            }
            return CompletableFuture.completedFuture(results);
        }

        @Override
        public CompletableFuture<Void> txnPrepare(TxnRef ref) {
            return txn(ref.stream(), ref.scope(), "txnPrepare " + ref, null);
        }

        @Override
        public CompletableFuture<Void> txnCommit(TxnRef ref) {
            return txn(ref.stream(), ref.scope(), "txnCommit " + ref, null);
        }

        @Override
        public CompletableFuture<Void> txnAbort(TxnRef ref) {
            return txn(ref.stream(), ref.scope(), "txnAbort " + ref, null);
        }

        @Override
        public CompletableFuture<List<TransactionInfo>> txnList(
                String stream, String idPrefix, int scope) {
            return txn(stream, scope, "txnList " + stream + scoped(scope), List.of());
        }

        @Override
        public void close() {
            calls.add("close");
        }

        @Override
        public String toString() {
            return "broker " + id + " at " + address;
        }
    }

    /** A long-poll fetch waiting for an append or its deadline. */
    private static final class Poll {
        final String stream;
        final List<FetchEntry> entries;
        final boolean replicaRead;
        final CompletableFuture<FetchResponse> future = new CompletableFuture<>();

        Poll(String stream, List<FetchEntry> entries, boolean replicaRead) {
            this.stream = stream;
            this.entries = entries;
            this.replicaRead = replicaRead;
        }

        boolean wants(int streamlet) {
            for (FetchEntry e : entries) {
                if (e.streamlet() == streamlet) {
                    return true;
                }
            }
            return false;
        }
    }

    /** A fetch response counted open until closed. */
    private final class CountedResponse implements FetchResponse {
        private final List<StreamletFetch> results;
        private boolean closed;

        CountedResponse(List<StreamletFetch> results) {
            this.results = results;
        }

        @Override
        public List<StreamletFetch> results() {
            return results;
        }

        @Override
        public synchronized void close() {
            if (!closed) {
                closed = true;
                openResponses.decrementAndGet();
            }
        }
    }

    private static <T> CompletableFuture<T> failed(StatusCode status, String message) {
        return CompletableFuture.failedFuture(new NearstreamClientException(status, message));
    }
}
