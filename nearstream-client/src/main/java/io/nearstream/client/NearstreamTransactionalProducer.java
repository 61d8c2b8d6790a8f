package io.nearstream.client;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends records to a stream in transactions (docs/protocol.md, "Transactions"): none of a
 * transaction's records is visible to any reader until it commits, then all of them are, in every
 * streamlet; an aborted transaction's records are never visible. Batching, ordering and retries are
 * {@link BatchingProducer}'s, every chunk going through a TxnAppend of the current transaction.
 * Chunk sequences start at 0 in each transaction, so a retried TxnAppend is stored once.
 *
 * <pre>{@code
 * try (NearstreamTransactionalProducer producer =
 *         new NearstreamTransactionalProducer(config, "orders-writer-0")) {
 *     producer.initTransactions(0); // fences earlier owners of the id, aborts what they left
 *     producer.beginTransaction();
 *     producer.send(key, value);
 *     // Flushes; survives broker restarts. One part per broker the transaction wrote to (per
 *     // streamlet, on a replicated stream).
 *     List<BrokerTxnRef> parts = producer.prepareTransaction();
 *     parts.forEach(producer::commit); // or later, elsewhere: the static commit(client, part, ...)
 * }
 * }</pre>
 *
 * <p><b>Replicated streams.</b> Their transactions are per streamlet (docs/protocol.md,
 * "Transaction scopes"), so that a transaction survives its streamlet's leader: with a cluster
 * client, the producer initialises the id in every streamlet's scope, begins a part in each
 * streamlet the transaction writes, and sends each scope's requests to the streamlet's leader at
 * the time, following it through a failover (NOT_OWNER, BROKER_UNAVAILABLE, {@code
 * STREAMLET_MOVING} and refused connections are retried after refreshing the cluster's view) as
 * plain appends do. Part keys, epochs and {@code keepPreparedThrough} are then by streamlet instead
 * of by broker ({@link BrokerTxnRef#partKey()}).
 *
 * <p><b>Errors.</b> Retriable failures (transport, {@code STORAGE_ERROR}, {@code SHUTTING_DOWN},
 * and a cluster's refusals while a streamlet fails over or moves) are retried with {@code
 * retry.backoff} until {@code delivery.timeout}. Any other failure — of a chunk ({@code
 * CHUNK_TOO_LARGE}, a delivery timeout …) or of a transaction request ({@code TXN_FENCED}: another
 * producer took the transactional id over; {@code TXN_ABORTED}; {@code STREAM_NOT_FOUND} …) — fails
 * the producer: the records get the error, and every later call throws it ({@link #failure()}),
 * with a message naming the cause. Only {@link #close()} is left.
 *
 * <p>{@code send()} may be called from any thread while a transaction is open; the transaction
 * methods are meant for one thread, and not concurrently with {@code send()}. Records sent through
 * a transactional producer report all-zero positions: a chunk has none until its transaction
 * commits.
 */
public final class NearstreamTransactionalProducer extends BatchingProducer {

    private static final Logger LOG =
            LoggerFactory.getLogger(NearstreamTransactionalProducer.class);

    /** The protocol's bound on a transactional id, in UTF-8 bytes. */
    public static final int MAX_TRANSACTIONAL_ID_BYTES = 255;

    private final String transactionalId;

    /** The brokers of the stream's transactions: the client's one broker, or a cluster's. */
    private final TxnBrokers brokers;

    /**
     * Whether the stream's transactions are per streamlet (a replicated stream); null until looked
     * up. A stream's replication does not change while it exists.
     */
    private volatile Boolean streamletScopes;

    /** The epoch of the last TxnInit in each part's scope, by part key; empty before it. */
    private volatile Map<Integer, Long> epochs = Map.of();

    /** The open transaction, or null. */
    private volatile OpenTransaction current;

    /** The failure that ended this producer, or null. */
    private volatile NearstreamClientException failure;

    /**
     * The open transaction: its part on each broker (each streamlet, on a replicated stream) that a
     * chunk went to so far. A part is begun (TxnBegin) by the first chunk for it, from the sender;
     * a begin that failed is tried again with the chunk's retry (TxnBegin of the same epoch is
     * idempotent).
     */
    private final class OpenTransaction {
        private final boolean inStreamletScopes = streamletScopes();
        private final Map<Integer, CompletableFuture<TxnRef>> parts = new ConcurrentHashMap<>();

        CompletableFuture<TxnRef> on(int part) {
            return parts.compute(
                    part,
                    (p, begun) ->
                            begun == null || begun.isCompletedExceptionally() ? begin(p) : begun);
        }

        private CompletableFuture<TxnRef> begin(int part) {
            Long epoch = epochs.get(part);
            if (epoch == null) {
                String what =
                        inStreamletScopes
                                ? "streamlet " + part + " of stream '" + stream() + "' was not"
                                : "broker "
                                        + part
                                        + " stores a streamlet of stream '"
                                        + stream()
                                        + "' but was not one of its brokers";
                return CompletableFuture.failedFuture(
                        new NearstreamClientException(
                                StatusCode.INVALID_TXN_STATE,
                                what
                                        + " at initTransactions() (the placement changed):"
                                        + " initialise again"));
            }
            if (inStreamletScopes) {
                TxnRef ref = new TxnRef(stream(), transactionalId, epoch, 0, part);
                return brokers.onStreamlet(stream(), part, c -> c.txnBegin(ref));
            }
            TxnRef ref = new TxnRef(stream(), transactionalId, epoch, 0);
            return brokers.on(stream(), part, c -> c.txnBegin(ref));
        }

        CompletableFuture<List<AppendResult>> append(int[] streamlets, List<byte[]> chunks) {
            return inStreamletScopes
                    ? brokers.streamletTxnAppend(stream(), this::on, streamlets, chunks)
                    : brokers.txnAppend(stream(), this::on, streamlets, chunks);
        }

        /**
         * The parts begun, by part key; after a flush every one is (a chunk whose part could not
         * begin failed the producer). A streamlet's part names the broker that leads it now.
         */
        List<BrokerTxnRef> begun() {
            List<BrokerTxnRef> refs = new ArrayList<>(parts.size());
            for (Map.Entry<Integer, CompletableFuture<TxnRef>> e :
                    new TreeMap<>(parts).entrySet()) {
                CompletableFuture<TxnRef> begin = e.getValue();
                if (begin.isDone() && !begin.isCompletedExceptionally()) {
                    int broker =
                            inStreamletScopes ? brokers.leaderOf(stream(), e.getKey()) : e.getKey();
                    refs.add(new BrokerTxnRef(broker, begin.join()));
                }
            }
            return refs;
        }
    }

    /**
     * Connects (unless the config carries a client) and looks up the stream; call {@link
     * #initTransactions} next. With a cluster client (a bootstrap list of several brokers) a
     * transaction spans the brokers it writes to: one broker transaction each (on a replicated
     * stream, one transaction per streamlet it writes to).
     *
     * @param transactionalId 1 to 255 UTF-8 bytes, none below 0x20; scoped to the config's stream
     * @throws IllegalArgumentException for a bad id, or a config with producer id 0 (a
     *     transactional producer retries its appends, so they must be idempotent)
     */
    public NearstreamTransactionalProducer(
            NearstreamProducerConfig config, String transactionalId) {
        super(
                config,
                idempotentProducerId(config),
                "nearstream-txn-producer-" + checkTransactionalId(transactionalId));
        this.transactionalId = transactionalId;
        this.brokers = TxnBrokers.of(client());
    }

    private static long idempotentProducerId(NearstreamProducerConfig config) {
        long id = config.producerIdForNewProducer();
        if (id == 0) {
            throw new IllegalArgumentException(
                    "a transactional producer needs a producer id other than 0: it retries"
                            + " appends, and only the id and sequence keep a retry from being"
                            + " stored twice");
        }
        return id;
    }

    /**
     * Checks a transactional id against the protocol's rule (1 to 255 UTF-8 bytes, none below 0x20)
     * and returns it.
     *
     * @throws IllegalArgumentException naming what is wrong
     */
    public static String checkTransactionalId(String id) {
        if (id == null) {
            throw new IllegalArgumentException("transactional id is null");
        }
        byte[] bytes = id.getBytes(StandardCharsets.UTF_8);
        if (bytes.length < 1 || bytes.length > MAX_TRANSACTIONAL_ID_BYTES) {
            throw new IllegalArgumentException(
                    "transactional id must be 1 to 255 UTF-8 bytes, got "
                            + bytes.length
                            + ": '"
                            + id
                            + "'");
        }
        for (byte b : bytes) {
            if ((b & 0xFF) < 0x20) {
                throw new IllegalArgumentException(
                        "transactional id must not contain control characters: '" + id + "'");
            }
        }
        return id;
    }

    public String transactionalId() {
        return transactionalId;
    }

    /**
     * The epoch of the last {@link #initTransactions} in each part's scope, by {@link
     * BrokerTxnRef#partKey() part key}: by broker ({@link BrokerTxnRef#ONLY_BROKER} for a
     * single-broker client), or by streamlet on a replicated stream; empty before it.
     */
    public Map<Integer, Long> epochs() {
        return epochs;
    }

    /**
     * Whether the stream's transactions are per streamlet (a replicated stream, through a cluster
     * client) rather than per broker: what the part keys of {@link #epochs()}, {@link
     * #initTransactions(Map)} and {@link BrokerTxnRef#partKey()} are. Looked up once.
     */
    public boolean streamletScopes() {
        Boolean known = streamletScopes;
        if (known == null) {
            known = lookUpParts().streamletScopes();
        }
        return known;
    }

    private TxnBrokers.Parts lookUpParts() {
        TxnBrokers.Parts parts =
                control(
                        "the transaction parts of stream '" + stream() + "'",
                        () -> brokers.partsOf(stream()),
                        false);
        streamletScopes = parts.streamletScopes();
        return parts;
    }

    /** Whether a transaction is open (begun and neither prepared, committed nor aborted). */
    public boolean inTransaction() {
        return current != null;
    }

    /** The failure that ended this producer, or null while it works. */
    public NearstreamClientException failure() {
        return failure;
    }

    // ---- transactions -----------------------------------------------------------------------

    /**
     * {@link #initTransactions(Map)} with the same {@code keepPreparedThrough} on every broker: for
     * a single-broker client, or 0 (keep nothing) on a cluster, whose serials are per broker (per
     * streamlet, on a replicated stream).
     *
     * @return the new epoch (the highest, over several parts)
     * @throws IllegalArgumentException for a serial other than 0 on a cluster
     */
    public long initTransactions(long keepPreparedThrough) {
        Map<Integer, Long> keep = Map.of();
        if (keepPreparedThrough != 0) {
            if (!brokers.single()) {
                throw new IllegalArgumentException(
                        "serials are per broker (per streamlet, on a replicated stream) in a"
                                + " cluster: give initTransactions a serial per part");
            }
            keep = Map.of(BrokerTxnRef.ONLY_BROKER, keepPreparedThrough);
        }
        long highest = 0;
        for (long e : initTransactions(keep).values()) {
            highest = Math.max(highest, e);
        }
        return highest;
    }

    /**
     * Registers this producer as the owner of its transactional id in every part's scope of the
     * stream (and every part named in {@code keepPreparedThroughByPart}): every earlier owner is
     * fenced (its requests get {@code TXN_FENCED}), its open transaction is aborted, and so are its
     * prepared transactions with a serial above the part's {@code keepPreparedThrough}; those at or
     * below it stay prepared for a committer to commit (a part not in the map keeps none).
     *
     * @param keepPreparedThroughByPart by {@link BrokerTxnRef#partKey() part key}: broker id, or
     *     streamlet on a replicated stream ({@link #streamletScopes()})
     * @return the new epoch in each part's scope
     */
    public Map<Integer, Long> initTransactions(Map<Integer, Long> keepPreparedThroughByPart) {
        throwIfFailed();
        if (current != null) {
            throw new IllegalStateException("a transaction is open: commit or abort it first");
        }
        Map<Integer, Long> initialised = new TreeMap<>();
        for (int part : partsToInit(keepPreparedThroughByPart.keySet())) {
            long keep = keepPreparedThroughByPart.getOrDefault(part, 0L);
            TxnInitResult r =
                    control(
                            "TxnInit of " + transactionalId + inPart(part),
                            () -> txnInit(transactionalId, part, keep),
                            true);
            initialised.put(part, r.epoch());
        }
        epochs = Collections.unmodifiableMap(initialised);
        return epochs;
    }

    /**
     * The parts of the stream in the client's view of its placement now (a stream without
     * replication may have gained or lost brokers since the last call), and {@code named},
     * ascending.
     */
    private Set<Integer> partsToInit(Set<Integer> named) {
        Set<Integer> all = new TreeSet<>(lookUpParts().keys());
        all.addAll(named);
        return all;
    }

    /** TxnInit of {@code id} in the scope of part {@code part}, where that scope lives now. */
    private CompletableFuture<TxnInitResult> txnInit(String id, int part, long keep) {
        if (streamletScopes()) {
            return brokers.onStreamlet(stream(), part, c -> c.txnInit(stream(), id, keep, part));
        }
        return brokers.on(stream(), part, c -> c.txnInit(stream(), id, keep));
    }

    /**
     * One request about {@code part} (TxnPrepare, TxnCommit, TxnAbort), sent to where its scope
     * lives through {@link #control}.
     */
    private void onPart(
            String what,
            BrokerTxnRef part,
            BiFunction<NearstreamClient, TxnRef, CompletableFuture<Void>> request,
            boolean own) {
        control(
                what + " of " + part,
                () -> brokers.onPart(part, c -> request.apply(c, part.ref())),
                own);
    }

    private String inPart(int part) {
        if (streamletScopes()) {
            return " in streamlet " + part + "'s scope";
        }
        return part == BrokerTxnRef.ONLY_BROKER ? "" : " on broker " + part;
    }

    /**
     * Begins a transaction; records sent from now on belong to it. Its part on each broker (each
     * streamlet, on a replicated stream) begins (TxnBegin) with the first chunk for it.
     */
    public void beginTransaction() {
        throwIfFailed();
        if (epochs.isEmpty()) {
            throw new IllegalStateException("call initTransactions() before beginTransaction()");
        }
        if (current != null) {
            throw new IllegalStateException("a transaction is already open");
        }
        resetSequences();
        current = new OpenTransaction();
    }

    /**
     * Sends every buffered record and waits for the broker's answers.
     *
     * @throws NearstreamClientException when the producer has failed (a record did, or a request)
     */
    @Override
    public void flush() {
        super.flush();
        throwIfFailed();
    }

    /**
     * Flushes, then prepares the open transaction in every part it wrote to: it takes no more
     * records, survives broker restarts and never times out, until {@link #commit(BrokerTxnRef)} or
     * {@link #abort(BrokerTxnRef)} of each returned part (from here or from anywhere else). A
     * transaction that wrote nothing has no part. The next transaction needs {@link
     * #beginTransaction()}.
     *
     * <p>This is the first phase of a two-phase commit: whoever keeps the returned parts (a Flink
     * checkpoint, for the sink) is the coordinator's record, and commits them all.
     */
    public List<BrokerTxnRef> prepareTransaction() {
        OpenTransaction txn = requireOpen();
        flush();
        List<BrokerTxnRef> parts = txn.begun();
        for (BrokerTxnRef part : parts) {
            onPart("TxnPrepare", part, NearstreamClient::txnPrepare, true);
        }
        current = null;
        return parts;
    }

    /**
     * Flushes and commits the open transaction. With one part that is one TxnCommit; over several
     * (brokers, or streamlets of a replicated stream), every part is prepared first and then
     * committed, so a failure before the last prepare leaves none committed (a successor's {@link
     * #initTransactions} aborts them). A failure while committing leaves the rest prepared: this
     * producer is the only coordinator, so for all-or-nothing across parts keep the parts of {@link
     * #prepareTransaction()} in a durable record and commit from it.
     */
    public void commitTransaction() {
        OpenTransaction txn = requireOpen();
        flush();
        List<BrokerTxnRef> parts = txn.begun();
        if (parts.size() > 1) {
            for (BrokerTxnRef part : parts) {
                onPart("TxnPrepare", part, NearstreamClient::txnPrepare, true);
            }
        }
        for (BrokerTxnRef part : parts) {
            onPart("TxnCommit", part, NearstreamClient::txnCommit, true);
        }
        current = null;
    }

    /**
     * Aborts the open transaction: records not sent yet fail with {@code TXN_ABORTED} and are not
     * sent, every broker discards what was. Works on a failed producer too (it stays failed).
     */
    public void abortTransaction() {
        OpenTransaction txn = current;
        if (txn == null) {
            throw new IllegalStateException("no transaction is open");
        }
        discardUnsent(abortedBeforeSending()).join();
        current = null;
        for (BrokerTxnRef part : txn.begun()) {
            onPart("TxnAbort", part, NearstreamClient::txnAbort, true);
        }
    }

    /**
     * Commits one part of a transaction prepared by any producer of the stream (a recovered
     * committer holds only the references); committing a committed transaction is OK. Does not fail
     * this producer.
     */
    public void commit(BrokerTxnRef part) {
        onPart("TxnCommit", part, NearstreamClient::txnCommit, false);
    }

    /** Aborts one part of a transaction of any producer of the stream; does not fail this one. */
    public void abort(BrokerTxnRef part) {
        onPart("TxnAbort", part, NearstreamClient::txnAbort, false);
    }

    /**
     * Commits {@code part} through {@code client} (one broker's, or a cluster's that knows the
     * part's broker), retrying retriable failures with {@code backoff} for up to {@code timeout}:
     * for a committer that has no producer. A streamlet scope's part goes to whichever broker leads
     * the streamlet now, which after a failover is not the one that prepared it. Committing a
     * committed transaction is OK.
     */
    public static void commit(
            NearstreamClient client, BrokerTxnRef part, Duration backoff, Duration timeout) {
        endPart(client, "TxnCommit", part, c -> c.txnCommit(part.ref()), backoff, timeout);
    }

    /**
     * Aborts {@code part} through {@code client}, as {@link #commit(NearstreamClient, BrokerTxnRef,
     * Duration, Duration)}.
     */
    public static void abort(
            NearstreamClient client, BrokerTxnRef part, Duration backoff, Duration timeout) {
        endPart(client, "TxnAbort", part, c -> c.txnAbort(part.ref()), backoff, timeout);
    }

    private static void endPart(
            NearstreamClient client,
            String what,
            BrokerTxnRef part,
            Function<NearstreamClient, CompletableFuture<Void>> request,
            Duration backoff,
            Duration timeout) {
        TxnBrokers brokers = TxnBrokers.of(client);
        RetryingCall.call(
                what + " of " + part, () -> brokers.onPart(part, request), backoff, timeout);
    }

    /**
     * TxnInit of <em>another</em> transactional id of the stream in every part's scope of the
     * stream (and every part named in {@code keepPreparedThroughByPart}, keyed as for {@link
     * #initTransactions(Map)}): fences its owner, aborts its open transaction and its prepared ones
     * above the part's serial (all of them in a part not in the map). For taking over the ids of a
     * previous run (e.g. a Flink job restored with another parallelism).
     */
    public void fence(String otherTransactionalId, Map<Integer, Long> keepPreparedThroughByPart) {
        checkTransactionalId(otherTransactionalId);
        for (int part : partsToInit(keepPreparedThroughByPart.keySet())) {
            long keep = keepPreparedThroughByPart.getOrDefault(part, 0L);
            control(
                    "TxnInit of " + otherTransactionalId + inPart(part),
                    () -> txnInit(otherTransactionalId, part, keep),
                    false);
        }
    }

    /**
     * The open and prepared transactions whose ids start with {@code idPrefix}, in every part's
     * scope of the stream (a transaction over several parts is listed once per part).
     */
    public List<TransactionInfo> listTransactions(String idPrefix) {
        List<TransactionInfo> all = new ArrayList<>();
        for (int part : partsToInit(Set.of())) {
            all.addAll(
                    control(
                            "TxnList of '" + idPrefix + "'" + inPart(part),
                            () ->
                                    streamletScopes()
                                            ? brokers.onStreamlet(
                                                    stream(),
                                                    part,
                                                    c -> c.txnList(stream(), idPrefix, part))
                                            : brokers.on(
                                                    stream(),
                                                    part,
                                                    c -> c.txnList(stream(), idPrefix)),
                            false));
        }
        return all;
    }

    /**
     * Aborts the open transaction, if any, with one attempt per part (records not sent yet are
     * dropped; a part that cannot be reached is aborted when the id is initialised again, or after
     * its transaction timeout), then stops the sender and closes the connection it opened.
     */
    @Override
    public void close(Duration timeout) {
        OpenTransaction txn = current;
        if (txn != null) {
            current = null;
            abortQuietly(txn, timeout);
        }
        super.close(timeout);
    }

    private void abortQuietly(OpenTransaction txn, Duration timeout) {
        long waitMs = Math.min(timeout.toMillis(), config().deliveryTimeout().toMillis());
        try {
            discardUnsent(abortedBeforeSending()).get(waitMs, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        } catch (Exception e) {
            LOG.info("Could not discard the unsent records on close: {}", e.toString());
        }
        for (BrokerTxnRef part : txn.begun()) {
            try {
                brokers.onPart(part, c -> c.txnAbort(part.ref()))
                        .get(waitMs, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (Exception e) {
                LOG.info(
                        "Could not abort {} on close ({}); the broker aborts it when {} is"
                                + " initialised again, or after its transaction timeout",
                        part,
                        e.toString(),
                        transactionalId);
            }
        }
    }

    private NearstreamClientException abortedBeforeSending() {
        return new NearstreamClientException(
                StatusCode.TXN_ABORTED,
                "the transaction of '"
                        + transactionalId
                        + "' was aborted before the record was sent");
    }

    // ---- the sender's side ------------------------------------------------------------------

    @Override
    CompletableFuture<List<AppendResult>> sendChunks(int[] streamlets, List<byte[]> chunks) {
        OpenTransaction txn = current;
        if (txn == null) {
            // Unreachable while the transaction methods wait for what they sent.
            return CompletableFuture.failedFuture(
                    new NearstreamClientException(
                            StatusCode.INVALID_TXN_STATE, "no open transaction for the chunks"));
        }
        return txn.append(streamlets, chunks);
    }

    @Override
    void checkSendAllowed() {
        throwIfFailed();
        if (current == null) {
            throw new IllegalStateException(
                    "no transaction is open: call beginTransaction() before sending");
        }
    }

    @Override
    void chunkFailed(NearstreamClientException error, boolean discarded) {
        if (!discarded) {
            fail(error); // the transaction misses a chunk: it must not commit
        }
    }

    // ---- failures ---------------------------------------------------------------------------

    private OpenTransaction requireOpen() {
        throwIfFailed();
        OpenTransaction txn = current;
        if (txn == null) {
            throw new IllegalStateException("no transaction is open");
        }
        return txn;
    }

    private void throwIfFailed() {
        NearstreamClientException f = failure;
        if (f != null) {
            throw f;
        }
    }

    private void fail(NearstreamClientException error) {
        if (failure == null) {
            failure = explain(error);
            LOG.error("Transactional producer {} failed", transactionalId, failure);
        }
    }

    /**
     * Runs a transaction request with {@link RetryingCall}; a fatal failure is explained, and ends
     * this producer when {@code ownTransaction} (a request about its own transactions).
     */
    private <T> T control(String what, Supplier<CompletableFuture<T>> request, boolean own) {
        try {
            return RetryingCall.call(
                    what, request, config().retryBackoff(), config().deliveryTimeout());
        } catch (NearstreamClientException e) {
            if (own) {
                fail(e);
                throw failure;
            }
            throw explain(e);
        }
    }

    /** The same status, with a message that says what it means for this producer. */
    private NearstreamClientException explain(NearstreamClientException e) {
        String id = "'" + transactionalId + "'";
        String stream = "'" + stream() + "'";
        String why =
                switch (e.status()) {
                    case TXN_FENCED ->
                            "another producer took over transactional id "
                                    + id
                                    + " of stream "
                                    + stream
                                    + " (its TxnInit made a newer epoch than this producer's "
                                    + epochs
                                    + "): this producer is fenced and stops";
                    case TXN_ABORTED ->
                            "the transaction of "
                                    + id
                                    + " was aborted by the broker (its transaction timeout passed, an"
                                    + " operator aborted it, or a successor's TxnInit did)";
                    case CHUNK_TOO_LARGE ->
                            "a chunk does not fit in one segment of stream "
                                    + stream
                                    + ": a record larger than the stream's segment size cannot be"
                                    + " written";
                    case STREAM_NOT_FOUND -> "stream " + stream + " does not exist";
                    case TXN_NOT_FOUND ->
                            "the broker does not know the transaction of "
                                    + id
                                    + " (no TxnInit, its outcome is forgotten, or the stream was"
                                    + " recreated)";
                    default -> "transactional producer " + id + " on stream " + stream + " failed";
                };
        return new NearstreamClientException(e.status(), why + " (" + e.getMessage() + ")", e);
    }
}
