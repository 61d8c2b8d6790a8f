package io.nearstream.client;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * An asynchronous connection to one Nearstream broker. Requests are pipelined over a single TCP
 * connection and matched to responses by request id. A broker error completes the future
 * exceptionally with a {@link NearstreamClientException} carrying the broker's {@link StatusCode};
 * a lost connection fails every request in flight with {@link StatusCode#IO_ERROR} and the next
 * request reconnects.
 *
 * <p>Thread-safe: any thread may issue requests. Futures complete on the client's I/O thread, so
 * callbacks must not block.
 *
 * <pre>{@code
 * try (NearstreamClient client = NearstreamClient.connect("127.0.0.1:7420")) {
 *     client.createStream(StreamConfig.of("clicks", 4)).join();
 *     List<StreamletMetadata> md = client.metadata("clicks").join();
 * }
 * }</pre>
 *
 * <p>{@link #connect(String, NearstreamClientOptions)} takes one broker's address or a cluster's
 * bootstrap list ({@code "h1:7420,h2:7420"}): a list gives a {@link NearstreamClusterClient}, which
 * sends each streamlet's requests to the broker that stores it.
 */
public interface NearstreamClient extends AutoCloseable {

    /** {@link #connect(String, NearstreamClientOptions)} with the default options. */
    static NearstreamClient connect(String address) {
        return connect(address, NearstreamClientOptions.DEFAULTS);
    }

    /**
     * Connects to one broker ({@code HOST:PORT}: a {@link NettyNearstreamClient}) or to a cluster
     * through a comma-separated bootstrap list ({@code HOST:PORT,HOST:PORT…}: a {@link
     * NearstreamClusterClient}).
     *
     * @throws NearstreamClientException with {@link StatusCode#IO_ERROR} when no broker can be
     *     reached
     */
    static NearstreamClient connect(String address, NearstreamClientOptions options) {
        if (address.indexOf(',') >= 0) {
            return NearstreamClusterClient.connect(address, options);
        }
        return NettyNearstreamClient.connect(address, options);
    }

    /** The broker's {@code host:port} (a cluster client's bootstrap list). */
    String address();

    /** Protocol handshake; returns the broker epoch (changes on every broker start). */
    CompletableFuture<Long> handshake(String clientName);

    CompletableFuture<Void> createStream(StreamConfig config);

    CompletableFuture<Void> deleteStream(String name);

    CompletableFuture<StreamConfig> describeStream(String name);

    /** Names of all streams, sorted. */
    CompletableFuture<List<String>> listStreams();

    /** Metadata of the given streamlets, or of all of them when none is given. */
    CompletableFuture<List<StreamletMetadata>> metadata(String stream, int... streamlets);

    /**
     * Appends encoded chunks ({@code chunks.get(i)} to streamlet {@code streamlets[i]}); each entry
     * succeeds or fails on its own (see {@link AppendResult}).
     */
    CompletableFuture<List<AppendResult>> append(
            String stream, int[] streamlets, List<byte[]> chunks);

    /**
     * Reads whole chunks of several streamlets. When none has data the broker waits up to {@code
     * maxWaitMs} for an append before answering (long poll).
     */
    CompletableFuture<FetchResponse> fetch(String stream, int maxWaitMs, List<FetchEntry> entries);

    /**
     * {@link #fetch(String, int, List)} marked <b>replica read</b> when {@code replicaRead}
     * (docs/protocol.md, frame flag {@code 0x04}): a broker in the in-sync set of the entries'
     * streamlets that is not their leader answers from its own copy, at the leader's positions,
     * instead of answering {@code NOT_OWNER} (docs/cluster.md, "Follower reads"); a leader ignores
     * the flag. Only a client of one broker can choose the follower: the default refuses a replica
     * read with {@link StatusCode#INVALID_ARGUMENT} (a cluster client picks brokers per streamlet
     * through {@link #fetch(String, int, List, FollowerReads)}).
     */
    default CompletableFuture<FetchResponse> fetch(
            String stream, int maxWaitMs, List<FetchEntry> entries, boolean replicaRead) {
        if (replicaRead) {
            return CompletableFuture.failedFuture(
                    new NearstreamClientException(
                            StatusCode.INVALID_ARGUMENT,
                            "a replica read needs a client of the one broker that serves it, not "
                                    + getClass().getSimpleName()));
        }
        return fetch(stream, maxWaitMs, entries);
    }

    /**
     * {@link #fetch(String, int, List)} that reads each streamlet from the broker {@code reads}
     * picks for it: an in-sync follower, with the replica-read flag, or its leader; a streamlet the
     * follower does not serve falls back to its leader ({@link FollowerReads}). Only a cluster
     * client has followers to choose from: the default, for a client of one broker, reads every
     * streamlet from that broker and ignores {@code reads}.
     */
    default CompletableFuture<FetchResponse> fetch(
            String stream, int maxWaitMs, List<FetchEntry> entries, FollowerReads reads) {
        return fetch(stream, maxWaitMs, entries);
    }

    /** For each streamlet → timestamp (ms), the first chunk at or after that time. */
    CompletableFuture<List<TimestampLookup>> lookupTimestamps(
            String stream, Map<Integer, Long> timestampsByStreamlet);

    /**
     * The cluster as the broker sees it: the registered brokers and the placement (owner broker per
     * streamlet) of the given streams, or of every stream when none is given; streams that do not
     * exist are left out. A standalone broker answers with itself as the only broker, owning every
     * streamlet.
     */
    CompletableFuture<ClusterMetadata> clusterMetadata(String... streams);

    /**
     * Moves a streamlet to this client's broker (MoveStreamlet, docs/protocol.md "Moving a
     * streamlet"): sent to the broker that is to own the streamlet, which seals it on its current
     * owner, copies its retained chunks (every position stays valid) and switches the owner in
     * ZooKeeper; completes once it owns it with all its data. On failure nothing changed: the owner
     * keeps the streamlet.
     *
     * <p>The default fails with {@link StatusCode#INVALID_ARGUMENT}: not every client supports it.
     */
    default CompletableFuture<Void> moveStreamlet(String stream, int streamlet) {
        return CompletableFuture.failedFuture(
                new NearstreamClientException(
                        StatusCode.INVALID_ARGUMENT,
                        "moveStreamlet is not supported by " + getClass().getSimpleName()));
    }

    /** The broker's counters (the names of its Prometheus endpoint). */
    CompletableFuture<Map<String, Long>> stats();

    /**
     * Opens a push subscription of every record, in binary slots, served by the streamlets' leader:
     * {@link #pushSubscribe(String, List, PushSubscribeOptions)} with {@link
     * PushSubscribeOptions#of}.
     */
    default CompletableFuture<PushSubscription> pushSubscribe(
            String stream,
            int slotsPerRing,
            int slotBytes,
            int consumerTimeoutMs,
            List<PushRingSpec> rings) {
        return pushSubscribe(
                stream, rings, PushSubscribeOptions.of(slotsPerRing, slotBytes, consumerTimeoutMs));
    }

    /**
     * Opens a push subscription: the broker creates a shared memory region with one ring per {@code
     * rings} entry (ring {@code i} for {@code rings.get(i)}), laid out as {@code options} says, and
     * pushes the chunks of each split's streamlet into its ring from the split's start (only the
     * records that pass the options' filter). The subscription lives as long as this connection (or
     * until {@link #pushClose}); a ring whose consumer heartbeat is older than the options'
     * consumer timeout is reclaimed.
     *
     * <p>A replica read ({@link PushSubscribeOptions#replicaRead}) is served by a broker in the
     * in-sync set of the rings' streamlets that is not their leader, from its own copy at the
     * leader's positions, instead of answering {@code NOT_OWNER}; the subscription ends (its region
     * is closed) when that broker stops serving them. Only a client of one broker can choose the
     * follower: a client that routes requests to the streamlets' leader refuses a replica read with
     * {@link StatusCode#INVALID_ARGUMENT}.
     */
    CompletableFuture<PushSubscription> pushSubscribe(
            String stream, List<PushRingSpec> rings, PushSubscribeOptions options);

    /**
     * Replaces the rings of a subscription (same ring count): a split that stays keeps its push
     * position, a new one starts at its start.
     */
    CompletableFuture<Void> pushUpdate(long subscriptionId, List<PushRingSpec> rings);

    /** Ends a push subscription; the broker unlinks its region. */
    CompletableFuture<Void> pushClose(long subscriptionId);

    // ---- transactions (docs/protocol.md, "Transactions") ------------------------------------

    /**
     * Registers the caller as the owner of {@code transactionalId} in {@code stream}: bumps the
     * id's epoch, which fences every earlier owner, aborts the previous owner's open transaction
     * and its prepared transactions with a serial above {@code keepPreparedThrough} (0 = all of
     * them). In the {@link TxnRef#BROKER_SCOPE}, the scope of a stream without replication.
     */
    default CompletableFuture<TxnInitResult> txnInit(
            String stream, String transactionalId, long keepPreparedThrough) {
        return txnInit(stream, transactionalId, keepPreparedThrough, TxnRef.BROKER_SCOPE);
    }

    /**
     * {@link #txnInit(String, String, long)} in {@code scope} ({@link TxnRef#scope()}): each scope
     * has its own epochs and serials.
     */
    CompletableFuture<TxnInitResult> txnInit(
            String stream, String transactionalId, long keepPreparedThrough, int scope);

    /**
     * Begins a transaction in {@code ref}'s epoch (its serial is ignored); returns {@code ref} with
     * the new transaction's serial (or the open one's, for a retried begin).
     */
    CompletableFuture<TxnRef> txnBegin(TxnRef ref);

    /**
     * Appends chunks to an open transaction, as {@link #append} does outside one; the results carry
     * no positions (all-zero) until the transaction commits.
     */
    CompletableFuture<List<AppendResult>> txnAppend(
            TxnRef ref, int[] streamlets, List<byte[]> chunks);

    /** Freezes an open transaction: it survives broker restarts and never times out. */
    CompletableFuture<Void> txnPrepare(TxnRef ref);

    /** Makes all of a transaction's chunks visible at once; committing twice is OK. */
    CompletableFuture<Void> txnCommit(TxnRef ref);

    /** Discards a transaction's chunks; aborting twice is OK. */
    CompletableFuture<Void> txnAbort(TxnRef ref);

    /**
     * The open and prepared transactions of ids starting with {@code idPrefix} ("" = all), in every
     * scope the broker keeps.
     */
    default CompletableFuture<List<TransactionInfo>> txnList(String stream, String idPrefix) {
        return txnList(stream, idPrefix, TxnRef.BROKER_SCOPE);
    }

    /**
     * {@link #txnList(String, String)} in one streamlet scope, or in every scope for {@link
     * TxnRef#BROKER_SCOPE}.
     */
    CompletableFuture<List<TransactionInfo>> txnList(String stream, String idPrefix, int scope);

    /** Closes the connection; requests in flight fail. Idempotent. */
    @Override
    void close();
}
