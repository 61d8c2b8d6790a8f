package io.nearstream.client;

import io.nearstream.client.StreamletRouter.EntryCall;
import io.netty.channel.EventLoopGroup;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.StringJoiner;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.IntFunction;

/**
 * A {@link NearstreamClient} for a cluster of brokers (docs/protocol.md, "Cluster"): it learns from
 * ClusterMetadata which broker stores each streamlet and sends each streamlet's requests there,
 * over one connection per broker, opened when first needed.
 *
 * <ul>
 *   <li><b>Append, TxnAppend, Fetch, LookupTimestamp, Metadata</b> are split by owner, sent to the
 *       owners in parallel and merged back in request order (a merged fetch response keeps every
 *       broker's frame, without a copy, and releases them all on close). A fetch with {@link
 *       FollowerReads} sends a streamlet to the in-sync follower they pick instead, as a replica
 *       read, and to its leader while that follower does not serve it. Entries refused with
 *       NOT_OWNER or BROKER_UNAVAILABLE are sent again after a refresh of the view, up to three
 *       rounds; so are the entries of reads whose connection broke. What still fails carries its
 *       status with a message naming the broker.
 *   <li><b>CreateStream, DeleteStream, DescribeStream, ListStreams, Handshake, Stats</b> go to any
 *       broker: the one that answered ClusterMetadata last.
 *   <li><b>PushSubscribe, PushUpdate, PushClose</b> go to the one broker that stores every
 *       streamlet of the rings (a push subscription is per broker); rings over several brokers are
 *       refused.
 *   <li><b>Transactions</b> of a stream without replication are per broker. {@link #txnInit} and
 *       the other requests that name one transaction go to the broker of the stream when all its
 *       streamlets are on one broker; a transaction over several brokers is one transaction per
 *       broker, sent with {@link #onBroker} and {@link #txnAppend(String, IntFunction, int[],
 *       List)} ({@link NearstreamTransactionalProducer} does this). A replicated stream's are per
 *       streamlet: a request in a streamlet scope goes to the streamlet's leader and follows it
 *       through a failover as the streamlet's appends do ({@link #onStreamlet}, {@link
 *       #streamletTxnAppend}).
 * </ul>
 *
 * <p>The view is refreshed on NOT_OWNER, BROKER_UNAVAILABLE, a stream it does not know yet, and a
 * broken connection (then another broker is asked).
 *
 * <pre>{@code
 * try (NearstreamClient client = NearstreamClient.connect("10.0.0.1:7420,10.0.0.2:7420")) {
 *     client.append("clicks", new int[] {0, 1}, List.of(chunk0, chunk1)).join();
 * }
 * }</pre>
 */
public final class NearstreamClusterClient implements NearstreamClient {

    /** Rounds of a routed request (the first send and two resends). */
    static final int DEFAULT_MAX_ATTEMPTS = 3;

    /** The first pause before sending refused entries again; doubles each round. */
    static final Duration DEFAULT_BACKOFF = Duration.ofMillis(50);

    private final String bootstrap;
    private final ClusterView view = new ClusterView();
    private final BrokerConnections connections;
    private final ClusterRefresher refresher;
    private final StreamletRouter router;
    private final ClusterFetch fetcher;
    private final int maxAttempts;
    private final long backoffMs;
    private final Runnable onClose;
    private final AtomicBoolean closed = new AtomicBoolean();

    /** The broker (and stream) of each push subscription this client opened. */
    private final Map<Long, PushOwner> subscriptions = new ConcurrentHashMap<>();

    private record PushOwner(BrokerInfo broker, String stream) {}

    /**
     * A client that has not talked to any broker yet; the first request finds the cluster.
     *
     * @param factory opens a client per broker address, without waiting for the connection
     * @param onClose runs after every connection was closed
     */
    NearstreamClusterClient(
            String bootstrap,
            BrokerConnections.Factory factory,
            int maxAttempts,
            Duration backoff,
            Runnable onClose) {
        this.bootstrap = Objects.requireNonNull(bootstrap, "bootstrap");
        List<String> addresses = parseBootstrap(bootstrap);
        this.connections = new BrokerConnections(factory);
        this.refresher = new ClusterRefresher(view, connections, addresses);
        this.router = new StreamletRouter(view, connections, refresher, maxAttempts, backoff);
        this.fetcher = new ClusterFetch(router, view, connections, refresher);
        this.maxAttempts = maxAttempts;
        this.backoffMs = backoff.toMillis();
        this.onClose = onClose;
    }

    /** {@link #connect(String, NearstreamClientOptions)} with the default options. */
    public static NearstreamClusterClient connect(String bootstrap) {
        return connect(bootstrap, NearstreamClientOptions.DEFAULTS);
    }

    /**
     * Connects to a cluster: asks the bootstrap brokers ({@code HOST:PORT,HOST:PORT…}), in order,
     * for ClusterMetadata until one answers. Every broker connection uses {@code options}; without
     * an event loop group in them, the brokers' connections share one of {@code eventLoopThreads}
     * threads, owned by this client.
     *
     * @throws IllegalArgumentException when an entry of the list is not {@code HOST:PORT}
     * @throws NearstreamClientException with {@link StatusCode#IO_ERROR} when no bootstrap broker
     *     answers
     */
    public static NearstreamClusterClient connect(
            String bootstrap, NearstreamClientOptions options) {
        List<String> addresses = parseBootstrap(bootstrap);
        EventLoopGroup ownGroup = null;
        NearstreamClientOptions perBroker = options;
        if (options.eventLoopGroup() == null) {
            ownGroup =
                    NettyNearstreamClient.newEventLoopGroup(
                            options.eventLoopThreads(), "nearstream-cluster-client");
            perBroker = options.toBuilder().eventLoopGroup(ownGroup).build();
        }
        NearstreamClientOptions brokerOptions = perBroker;
        EventLoopGroup group = ownGroup;
        NearstreamClusterClient client =
                new NearstreamClusterClient(
                        bootstrap,
                        address -> NettyNearstreamClient.open(address, brokerOptions),
                        DEFAULT_MAX_ATTEMPTS,
                        DEFAULT_BACKOFF,
                        () -> {
                            if (group != null) {
                                NettyNearstreamClient.shutDown(group);
                            }
                        });
        try {
            // Each broker tried ends within its connect and request timeouts; this only guards.
            long perBrokerMs =
                    options.connectTimeout().toMillis() + options.requestTimeout().toMillis();
            client.refresher
                    .fetch(List.of(), false)
                    .get(perBrokerMs * addresses.size() + 5_000, TimeUnit.MILLISECONDS);
            return client;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            client.close();
            throw new NearstreamClientException(
                    StatusCode.IO_ERROR, "interrupted while connecting to " + bootstrap, e);
        } catch (ExecutionException | TimeoutException e) {
            client.close();
            Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
            throw new NearstreamClientException(
                    StatusCode.IO_ERROR,
                    "cannot reach the cluster at " + bootstrap + ": " + cause.getMessage(),
                    cause);
        }
    }

    /** The entries of a bootstrap list, each checked to be {@code HOST:PORT}. */
    static List<String> parseBootstrap(String bootstrap) {
        List<String> addresses = new ArrayList<>();
        for (String part : bootstrap.split(",")) {
            String address = part.trim();
            if (!address.isEmpty()) {
                NettyNearstreamClient.HostPort.parse(address);
                addresses.add(address);
            }
        }
        if (addresses.isEmpty()) {
            throw new IllegalArgumentException(
                    "bootstrap list must name at least one HOST:PORT, got '" + bootstrap + "'");
        }
        return addresses;
    }

    /** The bootstrap list this client was made with. */
    @Override
    public String address() {
        return bootstrap;
    }

    // ---- any broker -------------------------------------------------------------------------

    @Override
    public CompletableFuture<Long> handshake(String clientName) {
        return onAnyBroker(null, true, c -> c.handshake(clientName));
    }

    /**
     * Creates the stream through any broker, which forwards it to the cluster's controller. While
     * no controller can take it (one is being elected, a killed one's registration has not expired
     * yet, ZooKeeper is out of reach) the broker answers {@code CLUSTER_UNAVAILABLE}: the create is
     * sent again for up to {@link #PLACEMENT_RETRY}, to another broker after a lost connection, as
     * Kafka's admin client retries until its timeout. A create whose earlier try was made but not
     * answered then fails with {@code STREAM_EXISTS}.
     */
    @Override
    public CompletableFuture<Void> createStream(StreamConfig config) {
        Objects.requireNonNull(config, "config");
        // The new stream's placement replaces whatever an earlier stream of that name left.
        return placementChange(config.name(), c -> c.createStream(config))
                .thenCompose(v -> refresher.refresh(config.name(), true));
    }

    /** As {@link #createStream}: retried while the cluster answers {@code CLUSTER_UNAVAILABLE}. */
    @Override
    public CompletableFuture<Void> deleteStream(String name) {
        return placementChange(name, c -> c.deleteStream(name))
                .whenComplete((v, err) -> view.forget(name));
    }

    /** How long a create or delete is retried while no controller can take it. */
    static final Duration PLACEMENT_RETRY = Duration.ofSeconds(15);

    private CompletableFuture<Void> placementChange(
            String stream, Function<NearstreamClient, CompletableFuture<Void>> op) {
        return placementChange(stream, op, System.nanoTime() + PLACEMENT_RETRY.toNanos(), 0);
    }

    private CompletableFuture<Void> placementChange(
            String stream,
            Function<NearstreamClient, CompletableFuture<Void>> op,
            long deadlineNanos,
            int attempt) {
        return onAnyBroker(stream, false, op)
                .handle(
                        (v, err) -> {
                            if (err == null) {
                                return CompletableFuture.<Void>completedFuture(null);
                            }
                            NearstreamClientException e = StreamletRouter.asClientException(err);
                            long delayMs =
                                    Math.min(
                                            Math.max(backoffMs, 50) << Math.min(attempt, 10), 1000);
                            // After a lost connection the broker is suspect: the next try goes
                            // to another one.
                            boolean retriable =
                                    e.status() == StatusCode.CLUSTER_UNAVAILABLE
                                            || e.status() == StatusCode.IO_ERROR;
                            if (!retriable
                                    || System.nanoTime() + delayMs * 1_000_000 - deadlineNanos
                                            > 0) {
                                return CompletableFuture.<Void>failedFuture(e);
                            }
                            return CompletableFuture.runAsync(
                                            () -> {},
                                            CompletableFuture.delayedExecutor(
                                                    delayMs, TimeUnit.MILLISECONDS))
                                    .thenCompose(
                                            x ->
                                                    placementChange(
                                                            stream,
                                                            op,
                                                            deadlineNanos,
                                                            attempt + 1));
                        })
                .thenCompose(f -> f);
    }

    @Override
    public CompletableFuture<StreamConfig> describeStream(String name) {
        return onAnyBroker(name, true, c -> c.describeStream(name));
    }

    @Override
    public CompletableFuture<List<String>> listStreams() {
        return onAnyBroker(null, true, NearstreamClient::listStreams);
    }

    @Override
    public CompletableFuture<Map<String, Long>> stats() {
        return onAnyBroker(null, true, NearstreamClient::stats);
    }

    /**
     * This client's view after a refresh from a broker: the brokers, and the placements of {@code
     * streams} (of every stream when none is given).
     */
    @Override
    public CompletableFuture<ClusterMetadata> clusterMetadata(String... streams) {
        List<String> asked = streams == null ? List.of() : List.of(streams);
        return refresher.fetch(asked, false).thenApply(m -> view.snapshot(asked));
    }

    /**
     * Sends a request any broker answers to the home broker; a broken connection makes another
     * broker the home broker, and {@code resend} (for reads) sends the request there.
     */
    private <T> CompletableFuture<T> onAnyBroker(
            String stream, boolean resend, Function<NearstreamClient, CompletableFuture<T>> op) {
        return onAnyBroker(stream, resend, op, 0);
    }

    private <T> CompletableFuture<T> onAnyBroker(
            String stream,
            boolean resend,
            Function<NearstreamClient, CompletableFuture<T>> op,
            int attempt) {
        return refresher
                .home(stream)
                .thenCompose(
                        home ->
                                call(home.client(), op)
                                        .handle(
                                                (v, err) -> {
                                                    if (err == null) {
                                                        return CompletableFuture.completedFuture(v);
                                                    }
                                                    NearstreamClientException e =
                                                            StreamletRouter.asClientException(err);
                                                    if (e.status() == StatusCode.IO_ERROR) {
                                                        refresher.connectionFailed(home.broker());
                                                        if (resend && attempt + 1 < maxAttempts) {
                                                            return onAnyBroker(
                                                                    stream, true, op, attempt + 1);
                                                        }
                                                    }
                                                    return CompletableFuture.<T>failedFuture(
                                                            named(home.broker(), e));
                                                })
                                        .thenCompose(f -> f));
    }

    private static <T> CompletableFuture<T> call(
            NearstreamClient client, Function<NearstreamClient, CompletableFuture<T>> op) {
        try {
            return op.apply(client);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** {@code e} with a message that names the broker that answered it. */
    private static NearstreamClientException named(BrokerInfo b, NearstreamClientException e) {
        return new NearstreamClientException(e.status(), b.describe() + ": " + e.reason(), e);
    }

    // ---- per streamlet ----------------------------------------------------------------------

    /** One chunk of an Append or TxnAppend. */
    private record Chunk(int streamlet, byte[] chunk) {}

    private static List<Chunk> chunks(int[] streamlets, List<byte[]> chunks) {
        if (streamlets.length != chunks.size()) {
            throw new IllegalArgumentException(
                    streamlets.length
                            + " streamlets but "
                            + chunks.size()
                            + " chunks: one chunk per streamlet entry");
        }
        List<Chunk> entries = new ArrayList<>(streamlets.length);
        for (int i = 0; i < streamlets.length; i++) {
            entries.add(new Chunk(streamlets[i], chunks.get(i)));
        }
        return entries;
    }

    @Override
    public CompletableFuture<List<AppendResult>> append(
            String stream, int[] streamlets, List<byte[]> chunks) {
        return routeAppend(
                stream,
                streamlets,
                chunks,
                (b, c, part) -> c.append(stream, streamletsOf(part), chunksOf(part)));
    }

    @Override
    public CompletableFuture<List<AppendResult>> txnAppend(
            TxnRef ref, int[] streamlets, List<byte[]> chunks) {
        return routeAppend(
                ref.stream(),
                streamlets,
                chunks,
                (b, c, part) -> c.txnAppend(ref, streamletsOf(part), chunksOf(part)));
    }

    /**
     * Appends chunks to a transaction that spans brokers: each broker's part goes to that broker's
     * own transaction of the stream, which {@code txnOnBroker} names (and may begin first). A
     * failure of {@code txnOnBroker} fails that broker's entries with its status.
     */
    public CompletableFuture<List<AppendResult>> txnAppend(
            String stream,
            IntFunction<CompletableFuture<TxnRef>> txnOnBroker,
            int[] streamlets,
            List<byte[]> chunks) {
        return routeAppend(
                stream,
                streamlets,
                chunks,
                (b, c, part) ->
                        txnOnBroker
                                .apply(b.id())
                                .thenCompose(
                                        ref ->
                                                c.txnAppend(
                                                        ref, streamletsOf(part), chunksOf(part))));
    }

    /**
     * Appends chunks to a transaction of a replicated stream, whose parts are per streamlet: each
     * streamlet's chunks go to its leader, in that streamlet's own transaction, which {@code
     * txnOnStreamlet} names (and may begin). A broker leading several of the streamlets gets one
     * TxnAppend per streamlet (a request names one scope). A failure of {@code txnOnStreamlet} or
     * of one streamlet's TxnAppend fails that streamlet's entries with its status; when every
     * streamlet of a broker failed, the broker's part fails whole, as a broker's refusal of one
     * TxnAppend does, so that a refusal or a broken connection is handled as for any append.
     */
    public CompletableFuture<List<AppendResult>> streamletTxnAppend(
            String stream,
            IntFunction<CompletableFuture<TxnRef>> txnOnStreamlet,
            int[] streamlets,
            List<byte[]> chunks) {
        return routeAppend(
                stream, streamlets, chunks, (b, c, part) -> perStreamlet(c, part, txnOnStreamlet));
    }

    private static CompletableFuture<List<AppendResult>> perStreamlet(
            NearstreamClient c,
            List<Chunk> part,
            IntFunction<CompletableFuture<TxnRef>> txnOnStreamlet) {
        Map<Integer, List<Integer>> byStreamlet = new LinkedHashMap<>();
        for (int i = 0; i < part.size(); i++) {
            byStreamlet.computeIfAbsent(part.get(i).streamlet(), s -> new ArrayList<>()).add(i);
        }
        List<List<Integer>> groups = new ArrayList<>(byStreamlet.values());
        List<CompletableFuture<List<AppendResult>>> sent = new ArrayList<>(groups.size());
        for (List<Integer> group : groups) {
            List<Chunk> chunks = new ArrayList<>(group.size());
            for (int i : group) {
                chunks.add(part.get(i));
            }
            int streamlet = chunks.get(0).streamlet();
            CompletableFuture<List<AppendResult>> f;
            try {
                f =
                        txnOnStreamlet
                                .apply(streamlet)
                                .thenCompose(
                                        ref ->
                                                c.txnAppend(
                                                        ref,
                                                        streamletsOf(chunks),
                                                        chunksOf(chunks)));
            } catch (RuntimeException e) {
                f = CompletableFuture.failedFuture(e);
            }
            sent.add(f);
        }
        return CompletableFuture.allOf(sent.toArray(new CompletableFuture<?>[0]))
                .handle((v, err) -> mergeStreamlets(part, groups, sent));
    }

    /** The answers of one broker's per-streamlet TxnAppends, in the order of {@code part}. */
    private static List<AppendResult> mergeStreamlets(
            List<Chunk> part,
            List<List<Integer>> groups,
            List<CompletableFuture<List<AppendResult>>> sent) {
        AppendResult[] merged = new AppendResult[part.size()];
        NearstreamClientException firstFailure = null;
        boolean anyAnswered = false;
        for (int g = 0; g < groups.size(); g++) {
            List<Integer> group = groups.get(g);
            CompletableFuture<List<AppendResult>> f = sent.get(g);
            List<AppendResult> answered = null;
            NearstreamClientException failure = null;
            try {
                answered = f.join();
                if (answered.size() != group.size()) {
                    failure =
                            new NearstreamProtocolException(
                                    StatusCode.INTERNAL,
                                    "answered "
                                            + answered.size()
                                            + " results for "
                                            + group.size()
                                            + " entries");
                }
            } catch (RuntimeException e) {
                failure = StreamletRouter.asClientException(e);
            }
            if (failure == null) {
                anyAnswered = true;
                for (int k = 0; k < group.size(); k++) {
                    merged[group.get(k)] = answered.get(k);
                }
                continue;
            }
            if (firstFailure == null) {
                firstFailure = failure;
            }
            for (int i : group) {
                merged[i] =
                        new AppendResult(
                                part.get(i).streamlet(),
                                failure.status(),
                                failure.reason(),
                                Position.EARLIEST,
                                false);
            }
        }
        if (!anyAnswered) {
            throw firstFailure; // the whole part failed: the router handles it as one request
        }
        return List.of(merged);
    }

    private CompletableFuture<List<AppendResult>> routeAppend(
            String stream, int[] streamlets, List<byte[]> chunks, PartSender send) {
        List<Chunk> entries;
        try {
            entries = chunks(streamlets, chunks);
        } catch (IllegalArgumentException e) {
            return CompletableFuture.failedFuture(e);
        }
        return router.route(stream, entries, new AppendCall(send));
    }

    private static int[] streamletsOf(List<Chunk> part) {
        int[] s = new int[part.size()];
        for (int i = 0; i < s.length; i++) {
            s[i] = part.get(i).streamlet();
        }
        return s;
    }

    private static List<byte[]> chunksOf(List<Chunk> part) {
        List<byte[]> c = new ArrayList<>(part.size());
        for (Chunk chunk : part) {
            c.add(chunk.chunk());
        }
        return c;
    }

    @Override
    public CompletableFuture<FetchResponse> fetch(
            String stream, int maxWaitMs, List<FetchEntry> entries) {
        if (maxWaitMs < 0) {
            return CompletableFuture.failedFuture(
                    new IllegalArgumentException("maxWaitMs must be >= 0, got " + maxWaitMs));
        }
        return fetcher.fetch(stream, maxWaitMs, List.copyOf(entries), null);
    }

    /**
     * {@link #fetch(String, int, List)} that sends each streamlet's entry to the broker {@code
     * reads} picks: a follower, with the replica-read flag (docs/cluster.md, "Follower reads"), or
     * the leader. An entry the follower refuses, or whose follower cannot be reached, is sent to
     * the leader in the same fetch, and the streamlet reads from its leader for a while ({@link
     * FollowerReads}).
     */
    @Override
    public CompletableFuture<FetchResponse> fetch(
            String stream, int maxWaitMs, List<FetchEntry> entries, FollowerReads reads) {
        Objects.requireNonNull(reads, "reads");
        if (maxWaitMs < 0) {
            return CompletableFuture.failedFuture(
                    new IllegalArgumentException("maxWaitMs must be >= 0, got " + maxWaitMs));
        }
        return fetcher.fetch(stream, maxWaitMs, List.copyOf(entries), reads);
    }

    @Override
    public CompletableFuture<List<TimestampLookup>> lookupTimestamps(
            String stream, Map<Integer, Long> timestampsByStreamlet) {
        return router.route(
                stream, new ArrayList<>(timestampsByStreamlet.entrySet()), new LookupCall(stream));
    }

    @Override
    public CompletableFuture<List<StreamletMetadata>> metadata(String stream, int... streamlets) {
        MetadataCall call = new MetadataCall(stream);
        if (streamlets != null && streamlets.length > 0) {
            List<Integer> asked = new ArrayList<>(streamlets.length);
            for (int s : streamlets) {
                asked.add(s);
            }
            return router.route(stream, asked, call);
        }
        // "All of them" is every streamlet of the placement: each broker answers its own.
        return router.placement(stream)
                .thenCompose(
                        p -> {
                            List<Integer> all = new ArrayList<>(p.streamlets());
                            for (int s = 0; s < p.streamlets(); s++) {
                                all.add(s);
                            }
                            return router.route(stream, all, call);
                        });
    }

    /** Sends one broker's part of an Append or TxnAppend. */
    @FunctionalInterface
    private interface PartSender {
        CompletableFuture<List<AppendResult>> send(
                BrokerInfo broker, NearstreamClient client, List<Chunk> part);
    }

    /** Append and TxnAppend entries: a write is never sent again after its connection broke. */
    private static final class AppendCall implements EntryCall<Chunk, AppendResult> {
        private final PartSender send;

        AppendCall(PartSender send) {
            this.send = send;
        }

        @Override
        public int streamlet(Chunk entry) {
            return entry.streamlet();
        }

        @Override
        public CompletableFuture<List<AppendResult>> send(
                BrokerInfo info, NearstreamClient broker, List<Chunk> entries) {
            return send.send(info, broker, entries);
        }

        @Override
        public boolean perEntryStatus() {
            return true;
        }

        @Override
        public AppendResult failure(Chunk entry, StatusCode status, String message) {
            return new AppendResult(entry.streamlet(), status, message, Position.EARLIEST, false);
        }

        @Override
        public AppendResult answeredBy(BrokerInfo broker, AppendResult failed) {
            return new AppendResult(
                    failed.streamlet(),
                    failed.status(),
                    broker.describe() + ": " + failed.message(),
                    failed.position(),
                    failed.duplicate());
        }

        @Override
        public boolean resendAfterIoError() {
            return false;
        }
    }

    private static final class LookupCall
            implements EntryCall<Map.Entry<Integer, Long>, TimestampLookup> {
        private final String stream;

        LookupCall(String stream) {
            this.stream = stream;
        }

        @Override
        public int streamlet(Map.Entry<Integer, Long> entry) {
            return entry.getKey();
        }

        @Override
        public CompletableFuture<List<TimestampLookup>> send(
                BrokerInfo info, NearstreamClient broker, List<Map.Entry<Integer, Long>> entries) {
            Map<Integer, Long> part = new LinkedHashMap<>();
            for (Map.Entry<Integer, Long> e : entries) {
                part.put(e.getKey(), e.getValue());
            }
            return broker.lookupTimestamps(stream, part);
        }

        @Override
        public boolean perEntryStatus() {
            return true;
        }

        @Override
        public TimestampLookup failure(
                Map.Entry<Integer, Long> entry, StatusCode status, String message) {
            return new TimestampLookup(entry.getKey(), status, message, Position.EARLIEST);
        }

        @Override
        public boolean resendAfterIoError() {
            return true;
        }
    }

    /** Metadata has no status per streamlet: a refusal or failure fails the request whole. */
    private static final class MetadataCall implements EntryCall<Integer, StreamletMetadata> {
        private final String stream;

        MetadataCall(String stream) {
            this.stream = stream;
        }

        @Override
        public int streamlet(Integer entry) {
            return entry;
        }

        @Override
        public CompletableFuture<List<StreamletMetadata>> send(
                BrokerInfo info, NearstreamClient broker, List<Integer> entries) {
            int[] streamlets = new int[entries.size()];
            for (int i = 0; i < streamlets.length; i++) {
                streamlets[i] = entries.get(i);
            }
            return broker.metadata(stream, streamlets);
        }

        /** Matched by streamlet, not by order: the answer names each streamlet. */
        @Override
        public List<StreamletMetadata> match(
                BrokerInfo broker, List<Integer> sent, List<StreamletMetadata> answered) {
            Map<Integer, StreamletMetadata> byStreamlet = new HashMap<>();
            for (StreamletMetadata m : answered) {
                byStreamlet.put(m.streamlet(), m);
            }
            List<StreamletMetadata> matched = new ArrayList<>(sent.size());
            for (int s : sent) {
                StreamletMetadata m = byStreamlet.get(s);
                if (m == null) {
                    throw new NearstreamProtocolException(
                            StatusCode.INTERNAL,
                            broker.describe()
                                    + " did not answer the Metadata of streamlet "
                                    + Integer.toUnsignedString(s));
                }
                matched.add(m);
            }
            return matched;
        }

        @Override
        public boolean perEntryStatus() {
            return false;
        }

        @Override
        public boolean resendAfterIoError() {
            return true;
        }
    }

    // ---- one broker per stream: push and transactions ---------------------------------------

    /**
     * Sends a request to the one broker that owns every streamlet of {@code streamlets} (of the
     * whole stream when null); {@code several} makes the failure for streamlets on several brokers.
     * A refusal (the view was stale) refreshes the view and sends again; no other failure does.
     */
    private <T> CompletableFuture<T> onOwner(
            String stream,
            int[] streamlets,
            Function<Map<Integer, List<Integer>>, NearstreamClientException> several,
            BiFunction<BrokerInfo, NearstreamClient, CompletableFuture<T>> op,
            int attempt) {
        return router.placement(stream)
                .thenCompose(
                        p -> {
                            Map<Integer, List<Integer>> owners = owners(p, streamlets);
                            if (owners.size() > 1) {
                                return CompletableFuture.failedFuture(several.apply(owners));
                            }
                            if (owners.isEmpty()) {
                                // No streamlet to place (rings without splits): any broker.
                                return onAnyBroker(stream, false, c -> op.apply(null, c));
                            }
                            int owner = owners.keySet().iterator().next();
                            BrokerInfo b = view.broker(owner).orElse(null);
                            CompletableFuture<T> sent;
                            if (b == null) {
                                sent =
                                        CompletableFuture.failedFuture(
                                                new NearstreamClientException(
                                                        StatusCode.BROKER_UNAVAILABLE,
                                                        StreamletRouter.notRegistered(owner)));
                            } else {
                                sent = call(connections, b, op);
                            }
                            return sent.handle(
                                            (v, err) -> {
                                                if (err == null) {
                                                    return CompletableFuture.completedFuture(v);
                                                }
                                                return ownerFailed(
                                                        stream,
                                                        streamlets,
                                                        several,
                                                        op,
                                                        attempt,
                                                        b,
                                                        StreamletRouter.asClientException(err));
                                            })
                                    .thenCompose(f -> f);
                        });
    }

    private static <T> CompletableFuture<T> call(
            BrokerConnections connections,
            BrokerInfo b,
            BiFunction<BrokerInfo, NearstreamClient, CompletableFuture<T>> op) {
        try {
            return op.apply(b, connections.forBroker(b));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    private <T> CompletableFuture<T> ownerFailed(
            String stream,
            int[] streamlets,
            Function<Map<Integer, List<Integer>>, NearstreamClientException> several,
            BiFunction<BrokerInfo, NearstreamClient, CompletableFuture<T>> op,
            int attempt,
            BrokerInfo b,
            NearstreamClientException e) {
        StatusCode status = e.status();
        if (StreamletRouter.isRefusal(status) && attempt + 1 < maxAttempts) {
            long delayMs = status == StatusCode.NOT_OWNER ? 0 : backoffMs << attempt;
            return refresher
                    .refresh(stream, true)
                    .thenCompose(
                            v ->
                                    CompletableFuture.runAsync(
                                            () -> {},
                                            CompletableFuture.delayedExecutor(
                                                    delayMs, TimeUnit.MILLISECONDS)))
                    .thenCompose(v -> onOwner(stream, streamlets, several, op, attempt + 1));
        }
        if (b == null) {
            return CompletableFuture.failedFuture(e); // the message names the broker already
        }
        if (status == StatusCode.IO_ERROR) {
            refresher.connectionFailed(b);
            refresher.refresh(stream, false); // from another broker: this one may be gone
        } else if (status == StatusCode.STREAM_NOT_FOUND) {
            view.forget(stream);
        }
        return CompletableFuture.failedFuture(named(b, e));
    }

    /** The owners of {@code streamlets} (every streamlet when null) → their streamlets. */
    private static Map<Integer, List<Integer>> owners(StreamPlacement p, int[] streamlets) {
        Map<Integer, List<Integer>> owners = new TreeMap<>(Integer::compareUnsigned);
        if (streamlets == null) {
            for (int s = 0; s < p.streamlets(); s++) {
                owners.computeIfAbsent(p.owner(s), o -> new ArrayList<>()).add(s);
            }
        } else {
            for (int s : streamlets) {
                // A streamlet the stream does not have is the broker's to refuse.
                if (p.hasStreamlet(s)) {
                    owners.computeIfAbsent(p.owner(s), o -> new ArrayList<>()).add(s);
                }
            }
        }
        return owners;
    }

    /** "broker 1 at h:p (streamlets 0, 2), broker 2 at h:p (streamlets 1, 3)". */
    private String describeOwners(Map<Integer, List<Integer>> owners) {
        StringJoiner out = new StringJoiner(", ");
        owners.forEach(
                (id, streamlets) -> {
                    String broker =
                            view.broker(id)
                                    .map(BrokerInfo::describe)
                                    .orElse(
                                            "broker "
                                                    + Integer.toUnsignedString(id)
                                                    + " (not registered)");
                    StringJoiner list = new StringJoiner(", ", " (streamlets ", ")");
                    streamlets.forEach(s -> list.add(Integer.toUnsignedString(s)));
                    out.add(broker + list);
                });
        return out.toString();
    }

    private static int[] ringStreamlets(List<PushRingSpec> rings) {
        List<Integer> streamlets = new ArrayList<>();
        for (PushRingSpec ring : rings) {
            for (PushSplitStart split : ring.splits()) {
                streamlets.add(split.streamlet());
            }
        }
        int[] out = new int[streamlets.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = streamlets.get(i);
        }
        return out;
    }

    private NearstreamClientException pushOverBrokers(
            String stream, Map<Integer, List<Integer>> owners) {
        return new NearstreamClientException(
                StatusCode.INVALID_ARGUMENT,
                "a push subscription is per broker, but the rings' streamlets of stream '"
                        + stream
                        + "' are on "
                        + describeOwners(owners)
                        + ": subscribe once per broker");
    }

    @Override
    public CompletableFuture<PushSubscription> pushSubscribe(
            String stream, List<PushRingSpec> rings, PushSubscribeOptions options) {
        if (options.replicaRead()) {
            // Subscriptions go to the streamlets' leader: which follower would serve it is the
            // caller's choice, made with a client of that broker.
            return CompletableFuture.failedFuture(
                    new NearstreamClientException(
                            StatusCode.INVALID_ARGUMENT,
                            "a replica read needs a client of the one broker that serves it, not "
                                    + getClass().getSimpleName()));
        }
        return onOwner(
                stream,
                ringStreamlets(rings),
                owners -> pushOverBrokers(stream, owners),
                (b, c) ->
                        c.pushSubscribe(stream, rings, options)
                                .thenApply(sub -> remember(sub, b, stream, c)),
                0);
    }

    /** Notes which broker a subscription lives on, for its PushUpdate and PushClose. */
    private PushSubscription remember(
            PushSubscription sub, BrokerInfo b, String stream, NearstreamClient c) {
        if (b == null) {
            return sub; // no streamlet: any broker took it, and its later requests go to any
        }
        PushOwner before =
                subscriptions.putIfAbsent(sub.subscriptionId(), new PushOwner(b, stream));
        if (before != null && before.broker().id() != b.id()) {
            // Ids are chosen by each broker: two brokers may hand out the same one.
            c.pushClose(sub.subscriptionId());
            throw new NearstreamClientException(
                    StatusCode.INTERNAL,
                    b.describe()
                            + " answered push subscription id "
                            + Long.toUnsignedString(sub.subscriptionId())
                            + ", which this client already holds on "
                            + before.broker().describe()
                            + "; subscribe again");
        }
        return sub;
    }

    @Override
    public CompletableFuture<Void> pushUpdate(long subscriptionId, List<PushRingSpec> rings) {
        PushOwner owner = subscriptions.get(subscriptionId);
        if (owner == null) {
            return onAnyBroker(null, false, c -> c.pushUpdate(subscriptionId, rings));
        }
        StreamPlacement p = view.placement(owner.stream()).orElse(null);
        if (p != null) {
            Map<Integer, List<Integer>> owners = owners(p, ringStreamlets(rings));
            owners.remove(owner.broker().id());
            if (!owners.isEmpty()) {
                return CompletableFuture.failedFuture(
                        new NearstreamClientException(
                                StatusCode.INVALID_ARGUMENT,
                                "push subscription "
                                        + Long.toUnsignedString(subscriptionId)
                                        + " lives on "
                                        + owner.broker().describe()
                                        + ", but the new rings name streamlets on "
                                        + describeOwners(owners)));
            }
        }
        return onBroker(owner.broker(), c -> c.pushUpdate(subscriptionId, rings));
    }

    @Override
    public CompletableFuture<Void> pushClose(long subscriptionId) {
        PushOwner owner = subscriptions.remove(subscriptionId);
        if (owner == null) {
            return onAnyBroker(null, false, c -> c.pushClose(subscriptionId));
        }
        return onBroker(owner.broker(), c -> c.pushClose(subscriptionId));
    }

    /** Sends to one given broker; a failure names it. */
    private <T> CompletableFuture<T> onBroker(
            BrokerInfo b, Function<NearstreamClient, CompletableFuture<T>> op) {
        return call(connections, b, (info, c) -> op.apply(c))
                .handle(
                        (v, err) -> {
                            if (err == null) {
                                return v;
                            }
                            NearstreamClientException e = StreamletRouter.asClientException(err);
                            if (e.status() == StatusCode.IO_ERROR) {
                                refresher.connectionFailed(b);
                            }
                            throw named(b, e);
                        });
    }

    private <T> CompletableFuture<T> onStreamBroker(
            String stream, Function<NearstreamClient, CompletableFuture<T>> op) {
        return onOwner(
                stream,
                null,
                owners ->
                        new NearstreamClientException(
                                StatusCode.INVALID_ARGUMENT,
                                "a transaction request that names no broker needs a stream"
                                        + " stored by one broker, but stream '"
                                        + stream
                                        + "' is stored by "
                                        + describeOwners(owners)
                                        + ": send each broker's transaction with onBroker(), as"
                                        + " NearstreamTransactionalProducer does"),
                (b, c) -> op.apply(c),
                0);
    }

    /**
     * The ids of the brokers that store a streamlet of {@code stream}, ascending: the brokers a
     * transaction over the whole stream may span (transactions are per broker; docs/protocol.md,
     * "Cluster").
     */
    public CompletableFuture<List<Integer>> brokersOf(String stream) {
        return router.placement(stream).thenApply(p -> List.copyOf(owners(p, null).keySet()));
    }

    /** The placement of {@code stream}, looked up when the view does not have it. */
    CompletableFuture<StreamPlacement> placementOf(String stream) {
        return router.placement(stream);
    }

    /**
     * Sends a request about {@code stream} to the broker with id {@code brokerId}: for the requests
     * of one broker's transaction. A broker the view does not know is looked up once (with the
     * stream's placement); one that is not registered fails with {@code BROKER_UNAVAILABLE}. A
     * failure names the broker.
     */
    public <T> CompletableFuture<T> onBroker(
            String stream, int brokerId, Function<NearstreamClient, CompletableFuture<T>> op) {
        BrokerInfo known = view.broker(brokerId).orElse(null);
        if (known != null) {
            return onBroker(known, op);
        }
        return refresher
                .refresh(stream, false)
                .thenCompose(
                        v -> {
                            BrokerInfo b = view.broker(brokerId).orElse(null);
                            if (b == null) {
                                return CompletableFuture.<T>failedFuture(
                                        new NearstreamClientException(
                                                StatusCode.BROKER_UNAVAILABLE,
                                                StreamletRouter.notRegistered(brokerId)));
                            }
                            return onBroker(b, op);
                        });
    }

    /**
     * Moves streamlet {@code streamlet} of {@code stream} to broker {@code toBroker} with all its
     * data (docs/protocol.md, "Moving a streamlet"): MoveStreamlet goes to that broker, which
     * copies the streamlet from its owner and switches the placement. Completes once it owns it.
     */
    public CompletableFuture<Void> moveStreamlet(String stream, int streamlet, int toBroker) {
        // The placement from the target itself: it made the switch, while another broker learns
        // of it through a ZooKeeper watch and may still answer the old one.
        return onBroker(
                        stream,
                        toBroker,
                        c ->
                                c.moveStreamlet(stream, streamlet)
                                        .thenCompose(v -> c.clusterMetadata(stream)))
                .thenAccept(m -> view.update(m, List.of(stream), false));
    }

    /**
     * Sends a request of {@code stream}'s streamlet scope {@code streamlet} (a replicated stream's
     * transactions; docs/protocol.md, "Transaction scopes") to the streamlet's leader. A refusal
     * (NOT_OWNER, BROKER_UNAVAILABLE: a failover or a move) refreshes the view and sends again, up
     * to the client's rounds, as for the streamlet's appends; a broken connection refreshes the
     * view from another broker. What still fails names the broker; the caller retries retriable
     * failures (a failover outlasts the rounds), the transaction requests being idempotent.
     */
    public <T> CompletableFuture<T> onStreamlet(
            String stream, int streamlet, Function<NearstreamClient, CompletableFuture<T>> op) {
        return onOwner(
                stream,
                new int[] {streamlet},
                owners -> {
                    // One streamlet has one owner.
                    throw new IllegalStateException("streamlet on several brokers: " + owners);
                },
                (b, c) -> op.apply(c),
                0);
    }

    /**
     * The leader of {@code streamlet} in this client's view, without asking any broker, or {@link
     * BrokerTxnRef#ONLY_BROKER} when the view does not place it.
     */
    int leaderInView(String stream, int streamlet) {
        return view.placement(stream)
                .filter(p -> p.hasStreamlet(streamlet))
                .map(p -> p.owner(streamlet))
                .orElse(BrokerTxnRef.ONLY_BROKER);
    }

    /**
     * The broker scope's requests go to the stream's one broker, a streamlet scope's to its leader.
     */
    private <T> CompletableFuture<T> onScope(
            String stream, int scope, Function<NearstreamClient, CompletableFuture<T>> op) {
        return scope == TxnRef.BROKER_SCOPE
                ? onStreamBroker(stream, op)
                : onStreamlet(stream, scope, op);
    }

    @Override
    public CompletableFuture<TxnInitResult> txnInit(
            String stream, String transactionalId, long keepPreparedThrough, int scope) {
        return onScope(
                stream, scope, c -> c.txnInit(stream, transactionalId, keepPreparedThrough, scope));
    }

    @Override
    public CompletableFuture<TxnRef> txnBegin(TxnRef ref) {
        return onScope(ref.stream(), ref.scope(), c -> c.txnBegin(ref));
    }

    @Override
    public CompletableFuture<Void> txnPrepare(TxnRef ref) {
        return onScope(ref.stream(), ref.scope(), c -> c.txnPrepare(ref));
    }

    @Override
    public CompletableFuture<Void> txnCommit(TxnRef ref) {
        return onScope(ref.stream(), ref.scope(), c -> c.txnCommit(ref));
    }

    @Override
    public CompletableFuture<Void> txnAbort(TxnRef ref) {
        return onScope(ref.stream(), ref.scope(), c -> c.txnAbort(ref));
    }

    /**
     * {@inheritDoc}
     *
     * <p>Every scope ({@link TxnRef#BROKER_SCOPE}) of a replicated stream: each streamlet's scope
     * asked of its leader, the answers in streamlet order (the broker's own order too). Of a stream
     * without replication: the stream's one broker, as for the other requests.
     */
    @Override
    public CompletableFuture<List<TransactionInfo>> txnList(
            String stream, String idPrefix, int scope) {
        if (scope != TxnRef.BROKER_SCOPE) {
            return onStreamlet(stream, scope, c -> c.txnList(stream, idPrefix, scope));
        }
        return router.placement(stream)
                .thenCompose(
                        p -> {
                            if (!p.replicated()) {
                                return onStreamBroker(
                                        stream, c -> c.txnList(stream, idPrefix, scope));
                            }
                            List<CompletableFuture<List<TransactionInfo>>> scopes =
                                    new ArrayList<>();
                            for (int s = 0; s < p.streamlets(); s++) {
                                int streamlet = s;
                                scopes.add(
                                        onStreamlet(
                                                stream,
                                                streamlet,
                                                c -> c.txnList(stream, idPrefix, streamlet)));
                            }
                            return CompletableFuture.allOf(
                                            scopes.toArray(new CompletableFuture<?>[0]))
                                    .thenApply(
                                            v -> {
                                                List<TransactionInfo> all = new ArrayList<>();
                                                for (CompletableFuture<List<TransactionInfo>> f :
                                                        scopes) {
                                                    all.addAll(f.join());
                                                }
                                                return List.copyOf(all);
                                            });
                        });
    }

    /** Closes every broker connection; requests in flight fail. Idempotent. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            connections.close();
            onClose.run();
        }
    }

    @Override
    public String toString() {
        return "NearstreamClusterClient[" + bootstrap + "]";
    }
}
