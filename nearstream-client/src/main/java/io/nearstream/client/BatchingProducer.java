package io.nearstream.client;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What {@link NearstreamProducer} and {@link NearstreamTransactionalProducer} share: records are
 * batched per streamlet into chunks ({@code batch.size}, {@code linger.ms}), one request carries
 * the ready chunks of several streamlets (the producer request of KerA (Marcu et al.) and of the
 * pull-vs-push co-location paper (Marcu and Bouvry): one chunk per streamlet), and a background
 * sender thread keeps up to {@code max.in.flight.requests} requests on the wire. The subclass says
 * what a request is (an Append, or a TxnAppend of the current transaction).
 *
 * <p><b>Ordering and idempotence.</b> Each chunk carries the producer id and a per-streamlet
 * sequence number (+1 per chunk). A chunk that meets a retriable error (transport failure, timeout,
 * {@code STORAGE_ERROR}, {@code SHUTTING_DOWN}) is resent unchanged, with the same sequence; the
 * broker stores it once ({@code duplicate} answers count as success). A streamlet has <em>at most
 * one chunk in flight</em>, so a retry can never overtake a later chunk: records of one streamlet
 * are stored in {@code send()} order, while many streamlets are in flight at once. With producer id
 * 0 chunks are not deduplicated and a retry may store a chunk twice.
 *
 * <p>{@code send()} blocks only when {@code buffer.memory} is full. Futures complete, and {@link
 * SendCallback}s run, on the client's I/O thread when the broker answers, on the sender thread for
 * a chunk given up there (delivery timeout, or the producer closing), and on the caller's thread
 * for a record that cannot be sent at all: they must not block. A callback that throws is logged at
 * error level, and the other records' callbacks still run. The callback form costs no future per
 * record: for producers of millions of records a second that only watch for failures (one callback
 * instance for all sends), the futures and their completion were a fifth of the producer's CPU.
 *
 * <p>A chunk's timestamp (its header's {@code first_timestamp_ms}) is its first record's: the
 * timestamp given to it, or for a record sent without one ({@link #NO_TIMESTAMP}) the time the
 * chunk began, which is that record's {@code send()}.
 *
 * <p><b>Locking.</b> A record takes only its streamlet's append lock (uncontended while one thread
 * writes), never the producer's lock: with one shared lock per record, the lock's hand-offs between
 * the writing thread and the sender and I/O threads cost more CPU than the rest of {@code send()}.
 * The producer's lock guards what the sender and I/O threads share (sealed chunks ready to go, the
 * chunk in flight, sequences); a writer takes it once per chunk, to wake the sender. Lock order:
 * the producer's lock, then an append lock; a thread holding an append lock never takes the
 * producer's lock.
 *
 * <p>Thread-safe.
 */
public abstract sealed class BatchingProducer implements AutoCloseable
        permits NearstreamProducer, NearstreamTransactionalProducer {

    private static final Logger LOG = LoggerFactory.getLogger(BatchingProducer.class);

    /**
     * The timestamp of a record sent without one: a chunk that begins with it takes the time it
     * began (only a chunk's first record's timestamp is stored, so reading the clock per record
     * would be wasted: on a Flink task that was an eighth of its CPU).
     */
    public static final long NO_TIMESTAMP = Long.MIN_VALUE;

    /** When the sender looks again at a streamlet whose append lock was taken. */
    private static final long LINGER_RECHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    private final NearstreamProducerConfig config;
    private final NearstreamClient client;
    private final boolean ownsClient;
    private final String stream;
    private final int streamlets;

    /** The stream's segment size: no chunk may be larger (0 if the broker did not say). */
    private final int segmentBytes;

    private final NearstreamPartitioner partitioner;
    private final long producerId;
    private final long lingerNanos;
    private final long backoffNanos;
    private final long deliveryTimeoutNanos;

    private final ReentrantLock lock = new ReentrantLock();

    /** Signalled when the sender may have something to do. */
    private final Condition work = lock.newCondition();

    /** Signalled when buffer memory was released. */
    private final Condition space = lock.newCondition();

    private final StreamletState[] states;

    /**
     * Bytes of records taken and not yet stored or failed: added by writers (compare-and-set, never
     * above {@code buffer.memory}), subtracted under {@link #lock}, which then signals {@link
     * #space}.
     */
    private final AtomicLong bufferedBytes = new AtomicLong();

    /** Set under {@link #lock}; writers read it under their streamlet's append lock. */
    private volatile boolean closing;

    // Guarded by lock.
    private int inFlightRequests;
    private boolean aborting;

    private final Thread sender;

    /**
     * The batchers in front of this producer; {@link #flush()}, {@link #discardUnsent} and {@link
     * #resetSequences} reach what they hold.
     */
    private final List<RecordBatcher> batchers = new CopyOnWriteArrayList<>();

    /** How long the last answered request took, from dispatch to response. */
    private volatile long lastRequestNanos;

    /**
     * Connects (unless the config carries a client), looks up the stream's streamlets and starts
     * the sender thread, named {@code threadName}.
     */
    BatchingProducer(NearstreamProducerConfig config, long producerId, String threadName) {
        this.config = config;
        this.stream = config.stream();
        if (config.client() != null) {
            this.client = config.client();
            this.ownsClient = false;
        } else {
            this.client = NearstreamClient.connect(config.address(), config.clientOptions());
            this.ownsClient = true;
        }
        try {
            StreamConfig described = client.describeStream(stream).join();
            this.streamlets = described.streamlets();
            this.segmentBytes = described.segmentBytes();
        } catch (RuntimeException e) {
            if (ownsClient) {
                client.close();
            }
            throw unwrap(e);
        }
        this.partitioner = config.newPartitioner();
        this.producerId = producerId;
        this.lingerNanos = config.linger().toNanos();
        this.backoffNanos = config.retryBackoff().toNanos();
        this.deliveryTimeoutNanos = config.deliveryTimeout().toNanos();
        this.states = new StreamletState[streamlets];
        for (int i = 0; i < streamlets; i++) {
            states[i] = new StreamletState(i, Math.min(config.batchSizeBytes(), 1 << 20));
        }
        this.sender = new Thread(this::runSender, threadName);
        sender.setDaemon(true);
        sender.start();
    }

    /**
     * Sends one request of chunks ({@code chunks.get(i)} to streamlet {@code streamlets[i]}); the
     * results come in request order. Called on the sender thread, without the producer's lock.
     */
    abstract CompletableFuture<List<AppendResult>> sendChunks(
            int[] streamlets, List<byte[]> chunks);

    /**
     * Called before a record is taken; throws to refuse it (e.g. no transaction, or the producer
     * failed). Runs on the caller's thread, without the producer's lock.
     */
    void checkSendAllowed() {}

    /**
     * Called under the producer's lock when a chunk has failed for good (its records get the
     * error); must only record the failure. {@code discarded}: the chunk was dropped by {@link
     * #discardUnsent}, not refused.
     */
    void chunkFailed(NearstreamClientException error, boolean discarded) {}

    /** The connection requests go through. */
    final NearstreamClient client() {
        return client;
    }

    /** The configuration the producer was built with. */
    public final NearstreamProducerConfig config() {
        return config;
    }

    /** The stream the producer writes to. */
    public String stream() {
        return stream;
    }

    /** Number of streamlets of the stream. */
    public int streamlets() {
        return streamlets;
    }

    /**
     * How long the last answered request took, from its dispatch to its response, in milliseconds
     * (0 before the first): Flink's {@code currentSendTime}.
     */
    public long lastRequestMillis() {
        return TimeUnit.NANOSECONDS.toMillis(lastRequestNanos);
    }

    /** The producer id stamped on every chunk (0 = not idempotent). */
    public long producerId() {
        return producerId;
    }

    /** Sends a record without key to the streamlet the partitioner picks. */
    public CompletableFuture<RecordPosition> send(byte[] value) {
        return send(null, value);
    }

    /** Sends a record; the partitioner picks the streamlet from the key (may be null). */
    public CompletableFuture<RecordPosition> send(byte[] key, byte[] value) {
        int streamlet = partitioner.streamlet(key, value, streamlets);
        return sendTo(streamlet, value);
    }

    /** Sends a record to a given streamlet. */
    public CompletableFuture<RecordPosition> sendTo(int streamlet, byte[] value) {
        CompletableFuture<RecordPosition> future = new CompletableFuture<>();
        enqueue(streamlet, value, NO_TIMESTAMP, future);
        return future;
    }

    /**
     * Sends a record without key to the streamlet the partitioner picks; {@code callback} runs
     * once, when the record is stored or has failed for good (at once for a record that cannot be
     * sent at all).
     */
    public void send(byte[] value, SendCallback callback) {
        send(null, value, callback);
    }

    /** As {@link #send(byte[], SendCallback)}; the partitioner picks from the key (may be null). */
    public void send(byte[] key, byte[] value, SendCallback callback) {
        send(key, value, NO_TIMESTAMP, callback);
    }

    /**
     * As {@link #send(byte[], byte[], SendCallback)}, with the record's timestamp (ms since the
     * Unix epoch, or {@link #NO_TIMESTAMP}): a chunk carries its first record's.
     */
    public void send(byte[] key, byte[] value, long timestampMs, SendCallback callback) {
        enqueue(partitioner.streamlet(key, value, streamlets), value, timestampMs, callback);
    }

    /** As {@link #send(byte[], SendCallback)}, to a given streamlet. */
    public void sendTo(int streamlet, byte[] value, SendCallback callback) {
        enqueue(streamlet, value, NO_TIMESTAMP, callback);
    }

    /** As {@link #sendTo(int, byte[], SendCallback)}, with the record's timestamp. */
    public void sendTo(int streamlet, byte[] value, long timestampMs, SendCallback callback) {
        enqueue(streamlet, value, timestampMs, callback);
    }

    /**
     * Adds the record to its streamlet's open chunk; {@code completion} is the record's {@link
     * CompletableFuture} or {@link SendCallback} (one list of either, so the callback form
     * allocates nothing per record).
     */
    private void enqueue(int streamlet, byte[] value, long timestampMs, Object completion) {
        checkSendAllowed();
        NearstreamClientException refused = refusal(streamlet, value);
        if (refused != null) {
            reportFailed(completion, refused);
            return;
        }
        if (closing) {
            throw new IllegalStateException("the producer is closed");
        }
        long need = (long) value.length + Chunks.RECORD_PREFIX_BYTES;
        NearstreamClientException failure = reserve(need);
        if (failure != null) {
            reportFailed(completion, failure);
            return;
        }
        StreamletState st = states[streamlet];
        boolean wakeSender = false;
        st.appendLock.lock();
        try {
            if (closing) {
                // close() may have found every streamlet idle already: the record would be
                // stranded.
                bufferedBytes.addAndGet(-need);
                throw new IllegalStateException("the producer is closed");
            }
            OpenChunk open = st.open;
            if (open.wouldExceed(value.length, config.batchSizeBytes())) {
                seal(st);
                wakeSender = true;
            }
            if (open.add(value, timestampMs, completion)) {
                wakeSender = true; // the sender must arm this batch's linger timer
            }
            if (open.builder.size() >= config.batchSizeBytes()) {
                seal(st);
                wakeSender = true;
            }
        } finally {
            st.appendLock.unlock();
        }
        if (wakeSender) {
            wakeSender();
        }
    }

    private void wakeSender() {
        lock.lock();
        try {
            work.signal();
        } finally {
            lock.unlock();
        }
    }

    /**
     * A new {@link RecordBatcher} in front of this producer, for a caller confined to one thread.
     */
    public RecordBatcher newRecordBatcher() {
        RecordBatcher batcher = new RecordBatcher(this, streamlets, segmentBytes, partitioner);
        batchers.add(batcher);
        return batcher;
    }

    /** Whether a chunk of {@code streamlet} is on its way (sealed, not yet stored or failed). */
    final boolean hasPendingChunks(int streamlet) {
        return states[streamlet].pendingChunks.get() > 0;
    }

    /**
     * Why a record can never be sent ({@code streamlet} out of range, or larger than {@code
     * buffer.memory}), or null: the checks of {@code send()} and of a {@link RecordBatcher}.
     */
    @Nullable
    final NearstreamClientException refusal(int streamlet, byte[] value) {
        if (streamlet < 0 || streamlet >= streamlets) {
            return new NearstreamClientException(
                    StatusCode.STREAMLET_NOT_FOUND,
                    "streamlet " + streamlet + " of a stream with " + streamlets);
        }
        if ((long) value.length + Chunks.RECORD_PREFIX_BYTES > config.bufferMemoryBytes()) {
            return new NearstreamClientException(
                    StatusCode.INVALID_ARGUMENT,
                    "record of "
                            + value.length
                            + " bytes exceeds buffer.memory ("
                            + config.bufferMemoryBytes()
                            + ")");
        }
        return null;
    }

    /** Refuses a record when the producer is closed or the subclass says so. */
    final void checkOpen() {
        if (closing) {
            throw new IllegalStateException("the producer is closed");
        }
        checkSendAllowed();
    }

    /**
     * Takes a {@link RecordBatcher}'s chunk for {@code streamlet} (and resets it): waits up to
     * {@code max.block} for its buffer memory, then queues it for the sender. On the batcher's
     * thread, holding no lock.
     */
    final void handOver(int streamlet, OpenChunk open) {
        if (closing) {
            // The sender may have stopped: the chunk would never complete.
            failUnsent(
                    open,
                    new NearstreamClientException(
                            StatusCode.IO_ERROR, "producer closed before sending"));
            return;
        }
        NearstreamClientException failure = reserve(open.bytes());
        if (failure != null) {
            failUnsent(open, failure);
            return;
        }
        StreamletState st = states[streamlet];
        st.pendingChunks.incrementAndGet();
        st.sealed.add(toBatch(streamlet, open));
        wakeSender();
    }

    /** Fails a {@link RecordBatcher}'s chunk with {@code reason} (and resets it). */
    static void failUnsent(OpenChunk open, Exception reason) {
        List<Object> completions = open.completions;
        open.reset();
        for (Object c : completions) {
            reportFailed(c, reason);
        }
    }

    /**
     * Takes {@code need} bytes of {@code buffer.memory}, waiting up to {@code max.block} for them;
     * returns why it could not (the caller holds no lock).
     */
    @Nullable
    private NearstreamClientException reserve(long need) {
        if (tryReserve(need)) {
            return null;
        }
        lock.lock();
        try {
            long left = config.maxBlock().toNanos();
            while (!tryReserve(need)) {
                if (closing) {
                    throw new IllegalStateException("the producer is closed");
                }
                if (left <= 0) {
                    return new NearstreamClientException(
                            StatusCode.IO_ERROR,
                            "buffer.memory full for max.block "
                                    + config.maxBlock()
                                    + " (broker not keeping up or unreachable)");
                }
                left = space.awaitNanos(left);
            }
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new NearstreamClientException(
                    StatusCode.IO_ERROR, "interrupted while waiting for buffer space", e);
        } finally {
            lock.unlock();
        }
    }

    private boolean tryReserve(long need) {
        long limit = config.bufferMemoryBytes();
        while (true) {
            long used = bufferedBytes.get();
            if (used + need > limit) {
                return false;
            }
            if (bufferedBytes.compareAndSet(used, used + need)) {
                return true;
            }
        }
    }

    /** Gives back buffer memory of a chunk stored or failed; under {@link #lock}. */
    private void release(long bytes) {
        bufferedBytes.addAndGet(-bytes);
        space.signalAll();
    }

    /** Completes a record's future or runs its callback; a callback that throws is logged. */
    private static void reportStored(Object completion, RecordPosition position) {
        report(completion, position, null);
    }

    /** Fails a record's future or runs its callback with the error. */
    static void reportFailed(Object completion, Exception error) {
        report(completion, null, error);
    }

    @SuppressWarnings("unchecked")
    private static void report(
            Object completion, @Nullable RecordPosition position, @Nullable Exception error) {
        if (completion instanceof CompletableFuture<?> f) {
            if (error == null) {
                ((CompletableFuture<RecordPosition>) f).complete(position);
            } else {
                f.completeExceptionally(error);
            }
            return;
        }
        try {
            ((SendCallback) completion).onCompletion(position, error);
        } catch (RuntimeException e) {
            // The other records' callbacks must still run; say so, as Kafka's producer does.
            LOG.error("A SendCallback threw; the other records' callbacks still run", e);
        }
    }

    /**
     * Sends every buffered record now and waits until each record sent before this call has
     * succeeded or failed. What a {@link RecordBatcher} holds is handed over first, so with a
     * batcher call it on the batcher's thread.
     */
    public void flush() {
        flush(Long.MAX_VALUE);
    }

    private boolean flush(long timeoutNanos) {
        for (RecordBatcher batcher : batchers) {
            batcher.handOverAll();
        }
        List<CompletableFuture<Void>> waits = new ArrayList<>();
        lock.lock();
        try {
            for (StreamletState st : states) {
                takeSealed(st, true);
                for (Batch b : st.ready) {
                    waits.add(b.done);
                }
                if (st.inFlight != null) {
                    waits.add(st.inFlight.done);
                }
            }
            work.signal();
        } finally {
            lock.unlock();
        }
        CompletableFuture<Void> all =
                CompletableFuture.allOf(waits.toArray(new CompletableFuture[0]));
        try {
            if (timeoutNanos == Long.MAX_VALUE) {
                all.get();
            } else {
                all.get(timeoutNanos, TimeUnit.NANOSECONDS);
            }
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } catch (TimeoutException e) {
            return false;
        } catch (ExecutionException e) {
            return true; // batches complete their "done" normally; unreachable
        }
    }

    /**
     * Fails every record not on the wire yet with {@code reason}; the returned future completes
     * when the requests on the wire have been answered (or given up) too. Afterwards nothing of
     * what was sent before is pending.
     */
    final CompletableFuture<Void> discardUnsent(NearstreamClientException reason) {
        for (RecordBatcher batcher : batchers) {
            batcher.discard(reason);
        }
        List<Runnable> completions = new ArrayList<>();
        List<CompletableFuture<Void>> waits = new ArrayList<>();
        lock.lock();
        try {
            for (StreamletState st : states) {
                takeSealed(st, true);
                Batch b;
                while ((b = st.ready.pollFirst()) != null) {
                    b.discarded = true;
                    giveUp(st, b, reason, completions);
                }
                if (st.inFlight != null) {
                    st.inFlight.discarded = true; // not retried: its answer ends it
                    waits.add(st.inFlight.done);
                }
            }
        } finally {
            lock.unlock();
        }
        runAll(completions);
        return CompletableFuture.allOf(waits.toArray(new CompletableFuture[0]));
    }

    /**
     * Starts every streamlet's sequence at 0 again: a transaction's sequences are its own
     * (docs/protocol.md, "Idempotence inside a transaction"). Only while nothing is pending.
     */
    final void resetSequences() {
        for (RecordBatcher batcher : batchers) {
            if (!batcher.isEmpty()) {
                throw new IllegalStateException("records of the last transaction are pending");
            }
        }
        lock.lock();
        try {
            for (StreamletState st : states) {
                if (hasPending(st)) {
                    throw new IllegalStateException("records of the last transaction are pending");
                }
                st.nextSequence = 0;
                st.uncertainSequence = -1;
            }
        } finally {
            lock.unlock();
        }
    }

    /** Flushes, then stops the sender and closes the connection it opened. */
    @Override
    public void close() {
        close(Duration.ofMillis(Long.MAX_VALUE));
    }

    /**
     * Flushes for at most {@code timeout}; records not delivered by then fail with {@link
     * StatusCode#IO_ERROR}. Then stops the sender and closes the connection it opened.
     */
    public void close(Duration timeout) {
        lock.lock();
        try {
            if (closing) {
                return;
            }
        } finally {
            lock.unlock();
        }
        long nanos =
                timeout.toMillis() >= Long.MAX_VALUE / 1_000_000
                        ? Long.MAX_VALUE
                        : timeout.toNanos();
        boolean flushed = flush(nanos);
        lock.lock();
        try {
            closing = true;
            aborting = !flushed;
            work.signal();
            space.signalAll();
        } finally {
            lock.unlock();
        }
        try {
            sender.join(aborting ? 10_000 : 0);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (ownsClient) {
            client.close();
        }
    }

    // ---- sender -----------------------------------------------------------------------------

    /**
     * Per-streamlet state: the writers' side is guarded by {@link #appendLock}, the sender's side
     * by the producer's lock.
     */
    private static final class StreamletState {
        final int streamlet;

        final ReentrantLock appendLock = new ReentrantLock();

        // ---- guarded by appendLock
        final OpenChunk open;

        /**
         * Chunks sealed and not yet stored or failed (sealed, ready or in flight): a {@link
         * RecordBatcher} grows its chunk while there are some.
         */
        final AtomicInteger pendingChunks = new AtomicInteger();

        /**
         * Chunks sealed (under appendLock, so in send order) that the sender has not taken yet. A
         * queue without a lock, so that the sender never waits for a writer's append lock: a writer
         * that unlocks with a waiter behind it pays for waking that thread, and with one shared
         * lock that was a third of the writer's CPU.
         */
        final ConcurrentLinkedQueue<Batch> sealed = new ConcurrentLinkedQueue<>();

        // ---- guarded by the producer's lock

        /** Sealed chunks in send order; the head may be a chunk waiting for its retry. */
        final ArrayDeque<Batch> ready = new ArrayDeque<>();

        /** The one chunk of this streamlet on the wire, or null. */
        Batch inFlight;

        long nextSequence;

        /** Sequence of a chunk that failed with unknown outcome (-1: none). */
        long uncertainSequence = -1;

        StreamletState(int streamlet, int initialCapacity) {
            this.streamlet = streamlet;
            this.open = new OpenChunk(initialCapacity);
        }
    }

    /** A sealed chunk and its records' futures or callbacks. */
    private static final class Batch {
        final int streamlet;
        final byte[] chunk;
        final List<Object> completions;
        final long createdNanos;
        final long bytes;
        final CompletableFuture<Void> done = new CompletableFuture<>();
        long sequence = -1;
        int attempts;
        long retryAtNanos;

        /** Whether the last attempt may have been stored (transport failure). */
        boolean lastAttemptUncertain;

        /** Why the last attempt failed (it names the broker over a cluster), or null. */
        NearstreamClientException lastError;

        /** Given up by {@link #discardUnsent}: an error ends it, no retry. */
        boolean discarded;

        /** When the current attempt was dispatched. */
        long sentNanos;

        Batch(
                int streamlet,
                byte[] chunk,
                List<Object> completions,
                long createdNanos,
                long bytes) {
            this.streamlet = streamlet;
            this.chunk = chunk;
            this.completions = completions;
            this.createdNanos = createdNanos;
            this.bytes = bytes;
        }
    }

    /** Seals the open chunk into {@code sealed}; under the streamlet's append lock. */
    private void seal(StreamletState st) {
        st.pendingChunks.incrementAndGet();
        st.sealed.add(toBatch(st.streamlet, st.open));
    }

    /** The chunk {@code open} holds, as a batch to send; resets {@code open}. */
    private Batch toBatch(int streamlet, OpenChunk open) {
        byte[] chunk = open.builder.build(producerId, 0, open.firstTimestampMs);
        Batch b = new Batch(streamlet, chunk, open.completions, open.createdNanos, open.bytes());
        open.reset();
        return b;
    }

    /**
     * Moves the streamlet's sealed chunks to {@code ready}, sealing the open chunk first when
     * {@code sealOpen} (which waits for the append lock: only flush, discard and abort do); under
     * the producer's lock.
     */
    private void takeSealed(StreamletState st, boolean sealOpen) {
        if (sealOpen) {
            st.appendLock.lock();
            try {
                if (!st.open.isEmpty()) {
                    seal(st);
                }
            } finally {
                st.appendLock.unlock();
            }
        }
        Batch b;
        while ((b = st.sealed.poll()) != null) {
            st.ready.addLast(b);
        }
    }

    /**
     * Whether the streamlet has records not yet stored or failed; under the producer's lock (only
     * when flushing or closing: it waits for the append lock).
     */
    private boolean hasPending(StreamletState st) {
        if (!st.ready.isEmpty() || st.inFlight != null || !st.sealed.isEmpty()) {
            return true;
        }
        st.appendLock.lock();
        try {
            return !st.open.isEmpty() || !st.sealed.isEmpty();
        } finally {
            st.appendLock.unlock();
        }
    }

    private void runSender() {
        List<Runnable> completions = new ArrayList<>();
        while (true) {
            List<Batch> request = null;
            boolean exit = false;
            lock.lock();
            try {
                while (true) {
                    long now = System.nanoTime();
                    long wake = expireAndSeal(now, completions);
                    if (inFlightRequests < config.maxInFlightRequests()) {
                        request = collect(now);
                        if (request != null) {
                            inFlightRequests++;
                            break;
                        }
                    }
                    if (inFlightRequests < config.maxInFlightRequests()) {
                        for (StreamletState st : states) {
                            Batch head = st.ready.peekFirst();
                            if (st.inFlight == null && head != null) {
                                wake = Math.min(wake, head.retryAtNanos); // a retry backoff
                            }
                        }
                    }
                    if (closing && idle()) {
                        exit = true;
                        break;
                    }
                    if (!completions.isEmpty()) {
                        break;
                    }
                    if (wake == Long.MAX_VALUE) {
                        work.await();
                    } else {
                        // Never spin: a deadline already due waits at least a millisecond.
                        work.awaitNanos(Math.max(wake - now, 1_000_000));
                    }
                }
            } catch (InterruptedException e) {
                // Only close() could want this thread to stop; it signals instead.
                Thread.currentThread().interrupt();
                exit = true;
            } finally {
                lock.unlock();
            }
            runAll(completions);
            if (request != null) {
                dispatch(request);
            }
            if (exit) {
                return;
            }
        }
    }

    private boolean idle() {
        if (inFlightRequests > 0) {
            return false;
        }
        for (StreamletState st : states) {
            if (hasPending(st)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Fails expired chunks, seals lingered batches of idle streamlets; returns when it next has to
     * look (a linger or delivery deadline), or {@code Long.MAX_VALUE}.
     */
    private long expireAndSeal(long now, List<Runnable> completions) {
        long wake = Long.MAX_VALUE;
        for (StreamletState st : states) {
            takeSealed(st, aborting);
            while (!st.ready.isEmpty()) {
                Batch head = st.ready.peekFirst();
                if (st.inFlight != null) {
                    break;
                }
                boolean expired = now - head.createdNanos >= deliveryTimeoutNanos;
                if (!expired && !aborting) {
                    wake = Math.min(wake, head.createdNanos + deliveryTimeoutNanos);
                    break;
                }
                st.ready.pollFirst();
                giveUp(
                        st,
                        head,
                        new NearstreamClientException(
                                StatusCode.IO_ERROR,
                                aborting
                                        ? "producer closed before the chunk was delivered"
                                        : "chunk not delivered within delivery.timeout "
                                                + config.deliveryTimeout()
                                                + lastAttempt(head)),
                        completions);
            }
            if (!aborting && st.inFlight == null && st.ready.isEmpty()) {
                wake = Math.min(wake, sealLingered(st, now));
            }
        }
        return wake;
    }

    /** What the last attempt of {@code b} failed with, for the message of its expiry. */
    private static String lastAttempt(Batch b) {
        return b.lastError == null ? "" : "; the last attempt failed: " + b.lastError.getMessage();
    }

    /**
     * Seals the open chunk of an idle streamlet once its linger is over (or the producer closes)
     * and makes it ready; returns when to look again, or {@code Long.MAX_VALUE}.
     */
    private long sealLingered(StreamletState st, long now) {
        if (!st.appendLock.tryLock()) {
            // A writer is appending: it wakes the sender when it seals; look again soon in case
            // this was its last record.
            return now + LINGER_RECHECK_NANOS;
        }
        try {
            if (st.open.isEmpty()) {
                return Long.MAX_VALUE;
            }
            long due = st.open.createdNanos + lingerNanos;
            if (!closing && due - now > 0) {
                return due;
            }
            seal(st);
            takeSealed(st, false);
            return Long.MAX_VALUE;
        } finally {
            st.appendLock.unlock();
        }
    }

    /** Takes the head chunk of every streamlet that may send, up to max request bytes. */
    private List<Batch> collect(long now) {
        List<Batch> request = null;
        long bytes = 0;
        for (StreamletState st : states) {
            if (st.inFlight != null) {
                continue;
            }
            Batch head = st.ready.peekFirst();
            if (head == null || head.retryAtNanos - now > 0) {
                continue;
            }
            if (request != null && bytes + head.chunk.length > config.maxRequestBytes()) {
                break;
            }
            st.ready.pollFirst();
            st.inFlight = head;
            if (head.sequence < 0) {
                head.sequence = producerId == 0 ? 0 : st.nextSequence++;
                if (producerId != 0) {
                    Chunks.stampSequence(head.chunk, head.sequence);
                }
            }
            head.attempts++;
            head.sentNanos = now;
            if (request == null) {
                request = new ArrayList<>();
            }
            request.add(head);
            bytes += head.chunk.length;
        }
        return request;
    }

    private void dispatch(List<Batch> request) {
        int[] streamletIds = new int[request.size()];
        List<byte[]> chunks = new ArrayList<>(request.size());
        for (int i = 0; i < request.size(); i++) {
            streamletIds[i] = request.get(i).streamlet;
            chunks.add(request.get(i).chunk);
        }
        CompletableFuture<List<AppendResult>> f;
        try {
            f = sendChunks(streamletIds, chunks);
        } catch (RuntimeException e) {
            f = CompletableFuture.failedFuture(e);
        }
        f.whenComplete((results, err) -> onResponse(request, results, err));
    }

    private void onResponse(List<Batch> request, List<AppendResult> results, Throwable err) {
        List<Runnable> completions = new ArrayList<>();
        lock.lock();
        try {
            inFlightRequests--;
            long now = System.nanoTime();
            lastRequestNanos = now - request.get(0).sentNanos;
            NearstreamClientException requestError = null;
            if (err != null) {
                requestError = asClientException(err);
            } else if (results.size() != request.size()) {
                requestError =
                        new NearstreamClientException(
                                StatusCode.INTERNAL,
                                "append answered "
                                        + results.size()
                                        + " results for "
                                        + request.size()
                                        + " chunks");
            }
            for (int i = 0; i < request.size(); i++) {
                Batch b = request.get(i);
                StreamletState st = states[b.streamlet];
                st.inFlight = null;
                if (requestError != null) {
                    boolean uncertain = requestError.status() == StatusCode.IO_ERROR;
                    onError(st, b, requestError, uncertain, now, completions);
                    continue;
                }
                AppendResult r = results.get(i);
                if (r.ok()) {
                    st.uncertainSequence = -1;
                    succeed(b, r.position(), completions);
                } else if (r.status() == StatusCode.OUT_OF_ORDER_SEQUENCE
                        && !b.discarded
                        && producerId != 0
                        && st.uncertainSequence >= 0
                        && b.sequence == st.uncertainSequence + 1) {
                    // The chunk that failed with unknown outcome was not stored after all: this
                    // one takes over its sequence.
                    b.sequence = st.uncertainSequence;
                    st.nextSequence = b.sequence + 1;
                    st.uncertainSequence = -1;
                    Chunks.stampSequence(b.chunk, b.sequence);
                    b.retryAtNanos = now;
                    st.ready.addFirst(b);
                } else {
                    NearstreamClientException e =
                            new NearstreamClientException(
                                    r.status(), "streamlet " + b.streamlet + ": " + r.message());
                    // A broker never answers IO_ERROR for an entry: a cluster client does, for the
                    // entries of a part whose connection broke, which may have been stored.
                    boolean uncertain = r.status() == StatusCode.IO_ERROR;
                    onError(st, b, e, uncertain, now, completions);
                }
            }
            work.signal();
        } finally {
            lock.unlock();
        }
        runAll(completions);
    }

    private void onError(
            StreamletState st,
            Batch b,
            NearstreamClientException e,
            boolean uncertain,
            long now,
            List<Runnable> completions) {
        b.lastAttemptUncertain = uncertain;
        b.lastError = e;
        boolean retry =
                e.isRetriable()
                        && !aborting
                        && !b.discarded
                        && b.attempts <= config.retries()
                        && now - b.createdNanos < deliveryTimeoutNanos;
        if (retry) {
            b.retryAtNanos = now + backoffNanos;
            st.ready.addFirst(b);
        } else {
            giveUp(st, b, e, completions);
        }
    }

    /** Fails a chunk for good and keeps the streamlet's sequence consistent with the broker. */
    private void giveUp(
            StreamletState st, Batch b, NearstreamClientException e, List<Runnable> completions) {
        if (producerId != 0 && b.sequence >= 0) {
            if (b.lastAttemptUncertain) {
                // Maybe stored: continue after it; if it was not, the broker reports a gap for
                // the next chunk, which then takes over this sequence (see onResponse).
                st.uncertainSequence = b.sequence;
            } else if (b.sequence == st.nextSequence - 1) {
                st.nextSequence = b.sequence; // certainly not stored: reuse its sequence
            }
        }
        release(b.bytes);
        states[b.streamlet].pendingChunks.decrementAndGet();
        chunkFailed(e, b.discarded);
        completions.add(
                () -> {
                    for (Object c : b.completions) {
                        reportFailed(c, e);
                    }
                    b.done.complete(null);
                });
    }

    private void succeed(Batch b, Position position, List<Runnable> completions) {
        release(b.bytes);
        states[b.streamlet].pendingChunks.decrementAndGet();
        completions.add(
                () -> {
                    List<Object> cs = b.completions;
                    for (int i = 0; i < cs.size(); i++) {
                        reportStored(cs.get(i), new RecordPosition(b.streamlet, position, i));
                    }
                    b.done.complete(null);
                });
    }

    private static void runAll(List<Runnable> completions) {
        for (Runnable r : completions) {
            try {
                r.run();
            } catch (RuntimeException e) {
                // report() has logged any callback that threw; nothing else here is expected to
                // throw, and whatever does must not stop the sender (or the I/O thread).
            }
        }
        completions.clear();
    }

    /** The failure behind a future's exception; anything not from the broker is an I/O error. */
    static NearstreamClientException asClientException(Throwable t) {
        while (t instanceof java.util.concurrent.CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        if (t instanceof NearstreamClientException e) {
            return e;
        }
        return new NearstreamClientException(StatusCode.IO_ERROR, String.valueOf(t), t);
    }

    private static RuntimeException unwrap(RuntimeException e) {
        Throwable t = e;
        while (t instanceof java.util.concurrent.CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        return t instanceof RuntimeException r ? r : e;
    }
}
