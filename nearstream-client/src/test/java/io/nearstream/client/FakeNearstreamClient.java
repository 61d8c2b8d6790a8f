package io.nearstream.client;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A hand-written {@link NearstreamClient} for producer tests: DescribeStream answers a stream with
 * a given number of streamlets; each Append and TxnAppend is queued as an {@link AppendCall} that
 * the test answers when it wants to. TxnInit, TxnBegin, TxnPrepare, TxnCommit and TxnAbort answer
 * at once (OK, or the failure a test scripted with {@link #failNextTxnCall}) and are logged in
 * {@link #txnCalls()}: the broker's real transaction rules are tested against the real broker.
 */
final class FakeNearstreamClient implements NearstreamClient {

    private final int streamlets;
    private final BlockingQueue<AppendCall> appends = new LinkedBlockingQueue<>();
    private final AtomicInteger offsets = new AtomicInteger();
    private final AtomicInteger epochs = new AtomicInteger();
    private final AtomicInteger serials = new AtomicInteger();
    private final List<String> txnCalls = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final BlockingQueue<StatusCode> txnFailures = new LinkedBlockingQueue<>();
    volatile boolean closed;

    FakeNearstreamClient(int streamlets) {
        this.streamlets = streamlets;
    }

    /** One append request as sent, with copies of its chunks. */
    final class AppendCall {
        /** The transaction of a TxnAppend; null for an Append. */
        final TxnRef txn;

        final int[] streamlets;
        final List<byte[]> chunks = new ArrayList<>();
        final CompletableFuture<List<AppendResult>> result = new CompletableFuture<>();

        AppendCall(TxnRef txn, int[] streamlets, List<byte[]> chunks) {
            this.txn = txn;
            this.streamlets = streamlets.clone();
            for (byte[] c : chunks) {
                this.chunks.add(c.clone());
            }
        }

        ChunkHeader header(int i) {
            return Chunks.validate(chunks.get(i));
        }

        int size() {
            return streamlets.length;
        }

        /** Answers every entry with this status (OK entries get a fresh position). */
        void answer(StatusCode... statuses) {
            List<AppendResult> results = new ArrayList<>();
            for (int i = 0; i < streamlets.length; i++) {
                StatusCode s = statuses.length == 1 ? statuses[0] : statuses[i];
                results.add(
                        new AppendResult(
                                streamlets[i],
                                s,
                                s == StatusCode.OK ? "" : "scripted " + s,
                                s == StatusCode.OK
                                        ? new Position(1, 1, offsets.getAndAdd(1000))
                                        : Position.EARLIEST,
                                false));
            }
            result.complete(results);
        }

        void ok() {
            answer(StatusCode.OK);
        }

        /** Fails the whole request, as a broken connection or a frame-level status would. */
        void fail(StatusCode status) {
            result.completeExceptionally(new NearstreamClientException(status, "scripted"));
        }
    }

    /** The next append request sent, waiting up to 5 s. */
    AppendCall nextAppend() throws InterruptedException {
        AppendCall c = appends.poll(5, TimeUnit.SECONDS);
        if (c == null) {
            throw new AssertionError("no append request within 5 s");
        }
        return c;
    }

    /** The next append request if one comes within {@code ms}. */
    AppendCall pollAppend(long ms) throws InterruptedException {
        return appends.poll(ms, TimeUnit.MILLISECONDS);
    }

    @Override
    public String address() {
        return "fake:1";
    }

    @Override
    public CompletableFuture<Long> handshake(String clientName) {
        return CompletableFuture.completedFuture(1L);
    }

    @Override
    public CompletableFuture<Void> createStream(StreamConfig config) {
        return unsupported();
    }

    @Override
    public CompletableFuture<Void> deleteStream(String name) {
        return unsupported();
    }

    @Override
    public CompletableFuture<StreamConfig> describeStream(String name) {
        return CompletableFuture.completedFuture(StreamConfig.of(name, streamlets));
    }

    @Override
    public CompletableFuture<List<String>> listStreams() {
        return unsupported();
    }

    @Override
    public CompletableFuture<List<StreamletMetadata>> metadata(String stream, int... ids) {
        return unsupported();
    }

    @Override
    public CompletableFuture<List<AppendResult>> append(
            String stream, int[] streamletIds, List<byte[]> chunks) {
        return queue(null, streamletIds, chunks);
    }

    @Override
    public CompletableFuture<FetchResponse> fetch(
            String stream, int maxWaitMs, List<FetchEntry> entries) {
        return unsupported();
    }

    @Override
    public CompletableFuture<List<TimestampLookup>> lookupTimestamps(
            String stream, Map<Integer, Long> timestampsByStreamlet) {
        return unsupported();
    }

    /** As a standalone broker answers: broker 0, here, owns every streamlet of every stream. */
    @Override
    public CompletableFuture<ClusterMetadata> clusterMetadata(String... streams) {
        List<StreamPlacement> placements = new ArrayList<>();
        for (String name : streams) {
            placements.add(
                    new StreamPlacement(name, 0, java.util.Collections.nCopies(streamlets, 0)));
        }
        return CompletableFuture.completedFuture(
                new ClusterMetadata(
                        0, List.of(new BrokerInfo(0, address(), "localhost")), placements, 0));
    }

    @Override
    public CompletableFuture<Map<String, Long>> stats() {
        return unsupported();
    }

    @Override
    public CompletableFuture<PushSubscription> pushSubscribe(
            String stream, List<PushRingSpec> rings, PushSubscribeOptions options) {
        return unsupported();
    }

    @Override
    public CompletableFuture<Void> pushUpdate(long subscriptionId, List<PushRingSpec> rings) {
        return unsupported();
    }

    @Override
    public CompletableFuture<Void> pushClose(long subscriptionId) {
        return unsupported();
    }

    /** The next TxnInit, TxnBegin, TxnPrepare, TxnCommit or TxnAbort fails with {@code status}. */
    void failNextTxnCall(StatusCode status) {
        txnFailures.add(status);
    }

    /** The transaction calls so far, e.g. {@code "commit s/t epoch 1 serial 2"}. */
    List<String> txnCalls() {
        return List.copyOf(txnCalls);
    }

    private <T> CompletableFuture<T> txnCall(String what, T value) {
        txnCalls.add(what);
        StatusCode failure = txnFailures.poll();
        return failure == null
                ? CompletableFuture.completedFuture(value)
                : CompletableFuture.failedFuture(
                        new NearstreamClientException(failure, "scripted " + what));
    }

    @Override
    public CompletableFuture<TxnInitResult> txnInit(
            String stream, String transactionalId, long keepPreparedThrough, int scope) {
        // The broker scope is left out, as in TxnRef.toString(): a call in another scope shows.
        return txnCall(
                "init "
                        + stream
                        + "/"
                        + transactionalId
                        + " keep "
                        + keepPreparedThrough
                        + (scope == TxnRef.BROKER_SCOPE
                                ? ""
                                : " scope " + Integer.toUnsignedString(scope)),
                new TxnInitResult(epochs.incrementAndGet(), serials.get()));
    }

    @Override
    public CompletableFuture<TxnRef> txnBegin(TxnRef ref) {
        return txnCall("begin " + ref, ref.withSerial(serials.incrementAndGet()));
    }

    @Override
    public CompletableFuture<List<AppendResult>> txnAppend(
            TxnRef ref, int[] streamletIds, List<byte[]> chunks) {
        return queue(ref, streamletIds, chunks);
    }

    private CompletableFuture<List<AppendResult>> queue(
            TxnRef txn, int[] streamletIds, List<byte[]> chunks) {
        AppendCall call = new AppendCall(txn, streamletIds, chunks);
        appends.add(call);
        return call.result;
    }

    @Override
    public CompletableFuture<Void> txnPrepare(TxnRef ref) {
        return txnCall("prepare " + ref, null);
    }

    @Override
    public CompletableFuture<Void> txnCommit(TxnRef ref) {
        return txnCall("commit " + ref, null);
    }

    @Override
    public CompletableFuture<Void> txnAbort(TxnRef ref) {
        return txnCall("abort " + ref, null);
    }

    @Override
    public CompletableFuture<List<TransactionInfo>> txnList(
            String stream, String idPrefix, int scope) {
        return unsupported();
    }

    @Override
    public void close() {
        closed = true;
    }

    private static <T> CompletableFuture<T> unsupported() {
        return CompletableFuture.failedFuture(new UnsupportedOperationException("fake"));
    }
}
