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
 * a given number of streamlets; each Append is queued as an {@link AppendCall} that the test
 * answers when it wants to.
 */
final class FakeNearstreamClient implements NearstreamClient {

    private final int streamlets;
    private final BlockingQueue<AppendCall> appends = new LinkedBlockingQueue<>();
    private final AtomicInteger offsets = new AtomicInteger();
    volatile boolean closed;

    FakeNearstreamClient(int streamlets) {
        this.streamlets = streamlets;
    }

    /** One append request as sent, with copies of its chunks. */
    final class AppendCall {
        final int[] streamlets;
        final List<byte[]> chunks = new ArrayList<>();
        final CompletableFuture<List<AppendResult>> result = new CompletableFuture<>();

        AppendCall(int[] streamlets, List<byte[]> chunks) {
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
        AppendCall call = new AppendCall(streamletIds, chunks);
        appends.add(call);
        return call.result;
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

    @Override
    public CompletableFuture<Map<String, Long>> stats() {
        return unsupported();
    }

    @Override
    public CompletableFuture<PushSubscription> pushSubscribe(
            String stream,
            int slotsPerRing,
            int slotBytes,
            int consumerTimeoutMs,
            List<PushRingSpec> rings) {
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

    @Override
    public void close() {
        closed = true;
    }

    private static <T> CompletableFuture<T> unsupported() {
        return CompletableFuture.failedFuture(new UnsupportedOperationException("fake"));
    }
}
