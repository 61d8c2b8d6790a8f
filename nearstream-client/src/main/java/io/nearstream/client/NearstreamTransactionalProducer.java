package io.nearstream.client;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
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
 *     TxnRef ref = producer.prepareTransaction(); // flushes; survives broker restarts
 *     producer.commit(ref); // or, later and elsewhere: NearstreamTransactionalProducer.commit(...)
 * }
 * }</pre>
 *
 * <p><b>Errors.</b> Retriable failures (transport, {@code STORAGE_ERROR}, {@code SHUTTING_DOWN})
 * are retried with {@code retry.backoff} until {@code delivery.timeout}. Any other failure — of a
 * chunk ({@code CHUNK_TOO_LARGE}, a delivery timeout …) or of a transaction request ({@code
 * TXN_FENCED}: another producer took the transactional id over; {@code TXN_ABORTED}; {@code
 * STREAM_NOT_FOUND} …) — fails the producer: the records get the error, and every later call throws
 * it ({@link #failure()}), with a message naming the cause. Only {@link #close()} is left.
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

    /** The epoch of the last TxnInit; 0 before it. */
    private volatile long epoch;

    /** The open transaction, or null. */
    private volatile TxnRef current;

    /** The failure that ended this producer, or null. */
    private volatile NearstreamClientException failure;

    /**
     * Connects (unless the config carries a client) and looks up the stream; call {@link
     * #initTransactions} next.
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

    /** The epoch of the last {@link #initTransactions}, or 0 before it. */
    public long epoch() {
        return epoch;
    }

    /** The open transaction, or null. */
    public TxnRef currentTransaction() {
        return current;
    }

    /** The failure that ended this producer, or null while it works. */
    public NearstreamClientException failure() {
        return failure;
    }

    // ---- transactions -----------------------------------------------------------------------

    /**
     * Registers this producer as the owner of its transactional id: every earlier owner is fenced
     * (its requests get {@code TXN_FENCED}), its open transaction is aborted, and so are its
     * prepared transactions with a serial above {@code keepPreparedThrough}; those at or below it
     * stay prepared for a committer to commit (0 aborts them all).
     *
     * @return the new epoch
     */
    public long initTransactions(long keepPreparedThrough) {
        throwIfFailed();
        if (current != null) {
            throw new IllegalStateException(
                    "transaction " + current + " is open: commit or abort it first");
        }
        TxnInitResult r =
                control(
                        "TxnInit of " + transactionalId,
                        () -> client().txnInit(stream(), transactionalId, keepPreparedThrough),
                        true);
        epoch = r.epoch();
        return r.epoch();
    }

    /** Begins a transaction; records sent from now on belong to it. */
    public TxnRef beginTransaction() {
        throwIfFailed();
        if (epoch == 0) {
            throw new IllegalStateException("call initTransactions() before beginTransaction()");
        }
        if (current != null) {
            throw new IllegalStateException("transaction " + current + " is already open");
        }
        TxnRef begin = new TxnRef(stream(), transactionalId, epoch, 0);
        TxnRef ref = control("TxnBegin of " + begin, () -> client().txnBegin(begin), true);
        resetSequences();
        current = ref;
        return ref;
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
     * Flushes, then prepares the open transaction: it takes no more records, survives broker
     * restarts and never times out, until {@link #commit(TxnRef)} or {@link #abort(TxnRef)} with
     * the returned reference (from here or from anywhere else). The next transaction needs {@link
     * #beginTransaction()}.
     */
    public TxnRef prepareTransaction() {
        TxnRef ref = requireOpen();
        flush();
        control("TxnPrepare of " + ref, () -> client().txnPrepare(ref), true);
        current = null;
        return ref;
    }

    /** Flushes and commits the open transaction (prepare and commit in one step). */
    public void commitTransaction() {
        TxnRef ref = requireOpen();
        flush();
        control("TxnCommit of " + ref, () -> client().txnCommit(ref), true);
        current = null;
    }

    /**
     * Aborts the open transaction: records not sent yet fail with {@code TXN_ABORTED} and are not
     * sent, the broker discards what was. Works on a failed producer too (it stays failed).
     */
    public void abortTransaction() {
        TxnRef ref = current;
        if (ref == null) {
            throw new IllegalStateException("no transaction is open");
        }
        discardUnsent(abortedBeforeSending(ref)).join();
        current = null;
        control("TxnAbort of " + ref, () -> client().txnAbort(ref), true);
    }

    /**
     * Commits a transaction prepared by any producer of the stream (a recovered committer holds
     * only the reference); committing a committed transaction is OK. Does not fail this producer.
     */
    public void commit(TxnRef ref) {
        control("TxnCommit of " + ref, () -> client().txnCommit(ref), false);
    }

    /** Aborts a transaction of any producer of the stream; does not fail this producer. */
    public void abort(TxnRef ref) {
        control("TxnAbort of " + ref, () -> client().txnAbort(ref), false);
    }

    /**
     * Commits {@code ref} through {@code client}, retrying retriable failures with {@code backoff}
     * for up to {@code timeout}: for a committer that has no producer. Committing a committed
     * transaction is OK.
     */
    public static void commit(
            NearstreamClient client, TxnRef ref, Duration backoff, Duration timeout) {
        RetryingCall.call("TxnCommit of " + ref, () -> client.txnCommit(ref), backoff, timeout);
    }

    /**
     * Aborts {@code ref} through {@code client}, as {@link #commit(NearstreamClient, TxnRef, ...)}.
     */
    public static void abort(
            NearstreamClient client, TxnRef ref, Duration backoff, Duration timeout) {
        RetryingCall.call("TxnAbort of " + ref, () -> client.txnAbort(ref), backoff, timeout);
    }

    /**
     * TxnInit of <em>another</em> transactional id of the stream: fences its owner, aborts its open
     * transaction and its prepared ones above {@code keepPreparedThrough}. For taking over the ids
     * of a previous run (e.g. a Flink job restored with another parallelism).
     */
    public TxnInitResult fence(String otherTransactionalId, long keepPreparedThrough) {
        checkTransactionalId(otherTransactionalId);
        return control(
                "TxnInit of " + otherTransactionalId,
                () -> client().txnInit(stream(), otherTransactionalId, keepPreparedThrough),
                false);
    }

    /** The open and prepared transactions of the stream whose ids start with {@code idPrefix}. */
    public List<TransactionInfo> listTransactions(String idPrefix) {
        return control(
                "TxnList of '" + idPrefix + "'", () -> client().txnList(stream(), idPrefix), false);
    }

    /**
     * Aborts the open transaction, if any, with one attempt (records not sent yet are dropped; a
     * broker that cannot be reached aborts it when the id is initialised again, or after its
     * transaction timeout), then stops the sender and closes the connection it opened.
     */
    @Override
    public void close(Duration timeout) {
        TxnRef ref = current;
        if (ref != null) {
            current = null;
            abortQuietly(ref, timeout);
        }
        super.close(timeout);
    }

    private void abortQuietly(TxnRef ref, Duration timeout) {
        long waitMs = Math.min(timeout.toMillis(), config().deliveryTimeout().toMillis());
        try {
            discardUnsent(abortedBeforeSending(ref)).get(waitMs, TimeUnit.MILLISECONDS);
            client().txnAbort(ref).get(waitMs, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            LOG.info(
                    "Could not abort {} on close ({}); the broker aborts it when {} is"
                            + " initialised again, or after its transaction timeout",
                    ref,
                    e.toString(),
                    transactionalId);
        }
    }

    private static NearstreamClientException abortedBeforeSending(TxnRef ref) {
        return new NearstreamClientException(
                StatusCode.TXN_ABORTED,
                "transaction " + ref + " was aborted before the record was sent");
    }

    // ---- the sender's side ------------------------------------------------------------------

    @Override
    CompletableFuture<List<AppendResult>> sendChunks(int[] streamlets, List<byte[]> chunks) {
        TxnRef ref = current;
        if (ref == null) {
            // Unreachable while the transaction methods wait for what they sent.
            return CompletableFuture.failedFuture(
                    new NearstreamClientException(
                            StatusCode.INVALID_TXN_STATE, "no open transaction for the chunks"));
        }
        return client().txnAppend(ref, streamlets, chunks);
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

    private TxnRef requireOpen() {
        throwIfFailed();
        TxnRef ref = current;
        if (ref == null) {
            throw new IllegalStateException("no transaction is open");
        }
        return ref;
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
                                    + " (its TxnInit made a newer epoch than "
                                    + epoch
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
