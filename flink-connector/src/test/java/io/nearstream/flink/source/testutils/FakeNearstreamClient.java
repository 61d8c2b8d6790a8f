package io.nearstream.flink.source.testutils;

import io.nearstream.client.AppendResult;
import io.nearstream.client.BrokerInfo;
import io.nearstream.client.ChunkBlock;
import io.nearstream.client.ChunkBuilder;
import io.nearstream.client.ClusterMetadata;
import io.nearstream.client.FetchEntry;
import io.nearstream.client.FetchResponse;
import io.nearstream.client.FollowerReads;
import io.nearstream.client.GroupMetadata;
import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NearstreamClientException;
import io.nearstream.client.Position;
import io.nearstream.client.PushRingSpec;
import io.nearstream.client.PushSubscribeOptions;
import io.nearstream.client.PushSubscription;
import io.nearstream.client.RecordFilter;
import io.nearstream.client.SlotFormat;
import io.nearstream.client.StatusCode;
import io.nearstream.client.StreamConfig;
import io.nearstream.client.StreamPlacement;
import io.nearstream.client.StreamletFetch;
import io.nearstream.client.StreamletMetadata;
import io.nearstream.client.TimestampLookup;
import io.nearstream.client.TransactionInfo;
import io.nearstream.client.TxnInitResult;
import io.nearstream.client.TxnRef;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An in-memory broker behind the {@link NearstreamClient} interface, with the fetch semantics of
 * docs/protocol.md: whole chunks, at least one per entry, blocks per segment, {@code next} and
 * {@code tail}, long polls that end on an append or after their wait, {@code POSITION_OUT_OF_RANGE}
 * for positions that are no chunk boundary. Streamlets are laid out in small segments and groups so
 * readers cross both. Failures can be injected; every fetch response handed out is counted until it
 * is closed.
 *
 * <p>Thread-safe; futures complete on the calling thread or on a timer thread (long polls).
 */
public final class FakeNearstreamClient implements NearstreamClient {

    private final String address;
    private final Map<String, FakeStream> streams = new ConcurrentHashMap<>();
    private final List<PendingPoll> pendingPolls = new ArrayList<>();
    private final ScheduledExecutorService timer =
            Executors.newSingleThreadScheduledExecutor(
                    r -> {
                        Thread t = new Thread(r, "fake-nearstream-timer");
                        t.setDaemon(true);
                        return t;
                    });

    private final AtomicInteger fetches = new AtomicInteger();
    private final AtomicInteger metadataRequests = new AtomicInteger();
    private final AtomicInteger openResponses = new AtomicInteger();
    private final List<List<FetchEntry>> fetchRequests =
            Collections.synchronizedList(new ArrayList<>());
    private final List<Optional<FollowerReads>> fetchFollowerReads =
            Collections.synchronizedList(new ArrayList<>());
    private final Map<Integer, StatusCode> entryFailures = new ConcurrentHashMap<>();
    private volatile StatusCode failFetchesWith;
    private final AtomicInteger fetchFailuresLeft = new AtomicInteger();
    private volatile StatusCode failMetadataWith;
    private volatile boolean closed;

    /** Push RPCs issued through this client, in order (e.g. "subscribe 1 [..]", "close 1"). */
    private final List<String> pushCalls = Collections.synchronizedList(new ArrayList<>());

    private static final AtomicInteger SUBSCRIPTION_IDS = new AtomicInteger();
    private final Map<Long, List<PushRingSpec>> subscriptions = new ConcurrentHashMap<>();
    private volatile String pushRegionPath;
    private volatile java.util.function.LongConsumer onPushClose = id -> {};
    private volatile long pushBrokerEpoch = 7;
    private volatile StatusCode failPushUpdatesWith;
    private volatile Error closeThrows;

    public FakeNearstreamClient() {
        this("127.0.0.1:7420");
    }

    public FakeNearstreamClient(String address) {
        this.address = address;
    }

    // ------------------------------------------------------------------ test setup

    /** Creates a stream whose segments hold {@code segmentBytes} and groups two segments. */
    public FakeNearstreamClient createStream(String name, int streamlets, int segmentBytes) {
        streams.put(name, new FakeStream(streamlets, segmentBytes, 2));
        return this;
    }

    /** Appends one chunk of UTF-8 records with the given timestamp; returns its position. */
    public Position appendRecords(String stream, int streamlet, long timestamp, String... records) {
        ChunkBuilder builder = new ChunkBuilder();
        for (String r : records) {
            builder.add(r.getBytes(StandardCharsets.UTF_8));
        }
        return appendChunk(stream, streamlet, builder.build(0, 0, timestamp));
    }

    /** Appends an encoded chunk; returns its position. */
    public Position appendChunk(String stream, int streamlet, byte[] chunk) {
        Position p;
        synchronized (this) {
            p = stream(stream).streamlets.get(streamlet).append(chunk, timestampOf(chunk));
        }
        completePolls();
        return p;
    }

    /** The next {@code n} fetches fail as a whole with {@code status}. */
    public void failFetches(int n, StatusCode status) {
        failFetchesWith = status;
        fetchFailuresLeft.set(n);
    }

    /** Fetch entries of {@code streamlet} answer {@code status} until cleared (null). */
    public void failEntries(int streamlet, StatusCode status) {
        if (status == null) {
            entryFailures.remove(streamlet);
        } else {
            entryFailures.put(streamlet, status);
        }
    }

    /** Metadata requests fail with {@code status} until cleared (null). */
    public void failMetadata(StatusCode status) {
        failMetadataWith = status;
    }

    public int fetchCount() {
        return fetches.get();
    }

    public int metadataCount() {
        return metadataRequests.get();
    }

    public List<List<FetchEntry>> fetchRequests() {
        synchronized (fetchRequests) {
            return new ArrayList<>(fetchRequests);
        }
    }

    /**
     * The {@link FollowerReads} each fetch was given, in order; empty for a fetch without (from the
     * leaders). One broker serves every fetch whatever they choose.
     */
    public List<Optional<FollowerReads>> fetchFollowerReads() {
        synchronized (fetchFollowerReads) {
            return new ArrayList<>(fetchFollowerReads);
        }
    }

    /** Fetch responses handed out and not closed yet. */
    public int openResponses() {
        return openResponses.get();
    }

    /** Whether {@link #close()} was called (the fake goes on serving: tests share it). */
    public boolean isClosed() {
        return closed;
    }

    /** The position right after the last chunk of a streamlet (all-zero when it never had one). */
    public synchronized Position tail(String stream, int streamlet) {
        return stream(stream).streamlets.get(streamlet).tail();
    }

    // ------------------------------------------------------------------ NearstreamClient

    @Override
    public String address() {
        return address;
    }

    @Override
    public CompletableFuture<Long> handshake(String clientName) {
        return CompletableFuture.completedFuture(1L);
    }

    @Override
    public CompletableFuture<Void> createStream(StreamConfig config) {
        if (streams.putIfAbsent(
                        config.name(),
                        new FakeStream(
                                config.streamlets(),
                                config.segmentBytes() == 0 ? 8 << 20 : config.segmentBytes(),
                                2))
                != null) {
            return failed(StatusCode.STREAM_EXISTS, "stream '" + config.name() + "' exists");
        }
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletableFuture<Void> deleteStream(String name) {
        return streams.remove(name) == null
                ? failed(StatusCode.STREAM_NOT_FOUND, "no stream " + name)
                : CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletableFuture<StreamConfig> describeStream(String name) {
        FakeStream s = streams.get(name);
        if (s == null) {
            return failed(StatusCode.STREAM_NOT_FOUND, "stream '" + name + "' does not exist");
        }
        return CompletableFuture.completedFuture(
                new StreamConfig(
                        name,
                        s.streamlets.size(),
                        s.segmentBytes,
                        s.segmentsPerGroup,
                        1,
                        io.nearstream.client.Durability.NONE,
                        -1,
                        -1));
    }

    @Override
    public CompletableFuture<List<String>> listStreams() {
        List<String> names = new ArrayList<>(streams.keySet());
        Collections.sort(names);
        return CompletableFuture.completedFuture(names);
    }

    @Override
    public synchronized CompletableFuture<List<StreamletMetadata>> metadata(
            String stream, int... streamlets) {
        metadataRequests.incrementAndGet();
        if (failMetadataWith != null) {
            return failed(failMetadataWith, "injected metadata failure");
        }
        FakeStream s = streams.get(stream);
        if (s == null) {
            return failed(StatusCode.STREAM_NOT_FOUND, "stream '" + stream + "' does not exist");
        }
        List<StreamletMetadata> out = new ArrayList<>();
        if (streamlets.length == 0) {
            for (int i = 0; i < s.streamlets.size(); i++) {
                out.add(s.streamlets.get(i).metadata(i));
            }
        } else {
            for (int i : streamlets) {
                if (i >= s.streamlets.size()) {
                    return failed(StatusCode.STREAMLET_NOT_FOUND, "no streamlet " + i);
                }
                out.add(s.streamlets.get(i).metadata(i));
            }
        }
        return CompletableFuture.completedFuture(out);
    }

    @Override
    public CompletableFuture<List<AppendResult>> append(
            String stream, int[] streamlets, List<byte[]> chunks) {
        List<AppendResult> results = new ArrayList<>();
        for (int i = 0; i < streamlets.length; i++) {
            Position p = appendChunk(stream, streamlets[i], chunks.get(i));
            results.add(new AppendResult(streamlets[i], StatusCode.OK, "", p, false));
        }
        return CompletableFuture.completedFuture(results);
    }

    @Override
    public CompletableFuture<FetchResponse> fetch(
            String stream, int maxWaitMs, List<FetchEntry> entries, FollowerReads reads) {
        return fetch(stream, maxWaitMs, entries, Optional.of(reads));
    }

    @Override
    public CompletableFuture<FetchResponse> fetch(
            String stream, int maxWaitMs, List<FetchEntry> entries) {
        return fetch(stream, maxWaitMs, entries, Optional.empty());
    }

    private CompletableFuture<FetchResponse> fetch(
            String stream, int maxWaitMs, List<FetchEntry> entries, Optional<FollowerReads> reads) {
        fetches.incrementAndGet();
        fetchRequests.add(new ArrayList<>(entries));
        fetchFollowerReads.add(reads);
        if (failFetchesWith != null && fetchFailuresLeft.getAndDecrement() > 0) {
            return failed(failFetchesWith, "injected fetch failure");
        }
        synchronized (this) {
            FakeStream s = streams.get(stream);
            if (s == null) {
                return failed(
                        StatusCode.STREAM_NOT_FOUND, "stream '" + stream + "' does not exist");
            }
            FakeFetchResponse now = read(s, entries);
            if (now != null || maxWaitMs == 0) {
                return CompletableFuture.completedFuture(
                        now != null ? now : readAnyway(s, entries));
            }
            PendingPoll poll = new PendingPoll(stream, entries);
            pendingPolls.add(poll);
            timer.schedule(() -> expire(poll), maxWaitMs, TimeUnit.MILLISECONDS);
            return poll.future;
        }
    }

    @Override
    public synchronized CompletableFuture<List<TimestampLookup>> lookupTimestamps(
            String stream, Map<Integer, Long> timestampsByStreamlet) {
        FakeStream s = streams.get(stream);
        if (s == null) {
            return failed(StatusCode.STREAM_NOT_FOUND, "stream '" + stream + "' does not exist");
        }
        List<TimestampLookup> out = new ArrayList<>();
        timestampsByStreamlet.forEach(
                (streamlet, ts) -> {
                    FakeStreamlet f = s.streamlets.get(streamlet);
                    Position found = f.tail();
                    for (StoredChunk c : f.chunks) {
                        if (c.timestamp >= ts) {
                            found = c.position;
                            break;
                        }
                    }
                    out.add(new TimestampLookup(streamlet, StatusCode.OK, "", found));
                });
        return CompletableFuture.completedFuture(out);
    }

    /**
     * As a standalone broker answers: broker 0, at this client's address, owns every streamlet of
     * every stream (the asked ones that exist, or all of them sorted by name).
     */
    @Override
    public CompletableFuture<ClusterMetadata> clusterMetadata(String... names) {
        List<String> asked = new ArrayList<>();
        if (names.length == 0) {
            asked.addAll(streams.keySet());
            Collections.sort(asked);
        } else {
            asked.addAll(List.of(names));
        }
        List<StreamPlacement> placements = new ArrayList<>();
        for (String name : asked) {
            FakeStream s = streams.get(name);
            if (s != null) {
                placements.add(
                        new StreamPlacement(name, 0, Collections.nCopies(s.streamlets.size(), 0)));
            }
        }
        return CompletableFuture.completedFuture(
                new ClusterMetadata(
                        0, List.of(new BrokerInfo(0, address, "localhost")), placements, 0));
    }

    @Override
    public CompletableFuture<Map<String, Long>> stats() {
        return CompletableFuture.completedFuture(Map.of());
    }

    /** As the broker does, except that nothing is pushed: the test publishes the slots. */
    @Override
    public CompletableFuture<PushSubscription> pushSubscribe(
            String stream, List<PushRingSpec> rings, PushSubscribeOptions options) {
        if (closed) {
            return failed(StatusCode.IO_ERROR, "client closed");
        }
        if (options.replicaRead()) {
            return failed(StatusCode.INVALID_ARGUMENT, "a fake broker serves no replica reads");
        }
        RecordFilter filter = options.filter();
        SlotFormat slotFormat = options.slotFormat();
        long id = SUBSCRIPTION_IDS.incrementAndGet();
        subscriptions.put(id, List.copyOf(rings));
        pushCalls.add(
                "subscribe "
                        + id
                        + " "
                        + rings
                        + (filter.passesAll() ? "" : " filter " + filter.toSpec())
                        + (slotFormat == SlotFormat.BINARY
                                ? ""
                                : " format " + slotFormat.configText()));
        String path = pushRegionPath != null ? pushRegionPath : "/dev/shm/fake-push-" + id;
        return CompletableFuture.completedFuture(
                new PushSubscription(id, pushBrokerEpoch, path, 4096));
    }

    @Override
    public CompletableFuture<Void> pushUpdate(long subscriptionId, List<PushRingSpec> rings) {
        if (failPushUpdatesWith != null) {
            pushCalls.add("failed update " + subscriptionId);
            return failed(failPushUpdatesWith, "injected PushUpdate failure");
        }
        if (closed || subscriptions.replace(subscriptionId, List.copyOf(rings)) == null) {
            return failed(StatusCode.INVALID_ARGUMENT, "no subscription " + subscriptionId);
        }
        pushCalls.add("update " + subscriptionId + " " + rings);
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletableFuture<Void> pushClose(long subscriptionId) {
        onPushClose.accept(subscriptionId);
        subscriptions.remove(subscriptionId);
        pushCalls.add("close " + subscriptionId);
        return CompletableFuture.completedFuture(null);
    }

    // The source never uses transactions: the fake answers them as a broker without them would.

    @Override
    public CompletableFuture<TxnInitResult> txnInit(
            String stream, String transactionalId, long keepPreparedThrough, int scope) {
        return noTransactions();
    }

    @Override
    public CompletableFuture<TxnRef> txnBegin(TxnRef ref) {
        return noTransactions();
    }

    @Override
    public CompletableFuture<List<AppendResult>> txnAppend(
            TxnRef ref, int[] streamlets, List<byte[]> chunks) {
        return noTransactions();
    }

    @Override
    public CompletableFuture<Void> txnPrepare(TxnRef ref) {
        return noTransactions();
    }

    @Override
    public CompletableFuture<Void> txnCommit(TxnRef ref) {
        return noTransactions();
    }

    @Override
    public CompletableFuture<Void> txnAbort(TxnRef ref) {
        return noTransactions();
    }

    @Override
    public CompletableFuture<List<TransactionInfo>> txnList(
            String stream, String idPrefix, int scope) {
        return noTransactions();
    }

    private static <T> CompletableFuture<T> noTransactions() {
        return failed(StatusCode.UNKNOWN_OPCODE, "the fake broker has no transactions");
    }

    /** Later PushSubscribes answer with this region file and broker epoch. */
    public FakeNearstreamClient setPushRegion(String path, long brokerEpoch) {
        this.pushRegionPath = path;
        this.pushBrokerEpoch = brokerEpoch;
        return this;
    }

    /** PushUpdates fail with {@code status} until cleared (null); the subscription stays. */
    public FakeNearstreamClient failPushUpdates(StatusCode status) {
        this.failPushUpdatesWith = status;
        return this;
    }

    /**
     * The next {@link #close()} closes the connection (its subscriptions end) and then throws
     * {@code error}, as a class of the close path that cannot be loaded any more would.
     */
    public FakeNearstreamClient throwOnClose(Error error) {
        this.closeThrows = error;
        return this;
    }

    /** Runs (on the caller's thread) when a PushClose is issued, before it takes effect. */
    public FakeNearstreamClient onPushClose(java.util.function.LongConsumer hook) {
        this.onPushClose = hook;
        return this;
    }

    /** The push RPCs issued so far. */
    public List<String> pushCalls() {
        synchronized (pushCalls) {
            return new ArrayList<>(pushCalls);
        }
    }

    /** The rings of the subscriptions still open (a closed connection ends its subscriptions). */
    public Map<Long, List<PushRingSpec>> openSubscriptions() {
        return closed ? Map.of() : new HashMap<>(subscriptions);
    }

    @Override
    public void close() {
        closed = true;
        Error e = closeThrows;
        if (e != null) {
            closeThrows = null;
            throw e;
        }
    }

    // ------------------------------------------------------------------ internals

    private FakeStream stream(String name) {
        FakeStream s = streams.get(name);
        if (s == null) {
            throw new IllegalArgumentException("no stream " + name);
        }
        return s;
    }

    /** The response when some entry has data or an error; null when all would be empty. */
    private FakeFetchResponse read(FakeStream s, List<FetchEntry> entries) {
        FakeFetchResponse r = readAnyway(s, entries);
        for (StreamletFetch f : r.results) {
            if (!f.ok() || !f.blocks().isEmpty()) {
                return r;
            }
        }
        openResponses.decrementAndGet(); // never handed out
        return null;
    }

    private FakeFetchResponse readAnyway(FakeStream s, List<FetchEntry> entries) {
        List<StreamletFetch> results = new ArrayList<>();
        for (FetchEntry e : entries) {
            StatusCode injected = entryFailures.get(e.streamlet());
            if (injected != null) {
                results.add(
                        new StreamletFetch(
                                e.streamlet(),
                                injected,
                                "injected entry failure",
                                e.position(),
                                Position.EARLIEST,
                                List.of()));
            } else if (e.streamlet() >= s.streamlets.size()) {
                results.add(
                        new StreamletFetch(
                                e.streamlet(),
                                StatusCode.STREAMLET_NOT_FOUND,
                                "no streamlet " + e.streamlet(),
                                e.position(),
                                Position.EARLIEST,
                                List.of()));
            } else {
                results.add(s.streamlets.get(e.streamlet()).read(e));
            }
        }
        openResponses.incrementAndGet();
        return new FakeFetchResponse(results);
    }

    private void completePolls() {
        List<PendingPoll> ready = new ArrayList<>();
        synchronized (this) {
            for (PendingPoll p : new ArrayList<>(pendingPolls)) {
                FakeStream s = streams.get(p.stream);
                FakeFetchResponse r = s == null ? null : read(s, p.entries);
                if (r != null) {
                    pendingPolls.remove(p);
                    p.response = r;
                    ready.add(p);
                }
            }
        }
        for (PendingPoll p : ready) {
            p.future.complete(p.response);
        }
    }

    private void expire(PendingPoll poll) {
        FakeFetchResponse r;
        synchronized (this) {
            if (!pendingPolls.remove(poll)) {
                return;
            }
            FakeStream s = streams.get(poll.stream);
            if (s == null) {
                poll.future.completeExceptionally(
                        new NearstreamClientException(StatusCode.STREAM_NOT_FOUND, "deleted"));
                return;
            }
            r = readAnyway(s, poll.entries);
        }
        poll.future.complete(r);
    }

    private static long timestampOf(byte[] chunk) {
        return ByteBuffer.wrap(chunk).order(ByteOrder.LITTLE_ENDIAN).getLong(32);
    }

    private static <T> CompletableFuture<T> failed(StatusCode status, String message) {
        return CompletableFuture.failedFuture(new NearstreamClientException(status, message));
    }

    /** A long-poll fetch waiting for an append or its deadline. */
    private static final class PendingPoll {
        final String stream;
        final List<FetchEntry> entries;
        final CompletableFuture<FetchResponse> future = new CompletableFuture<>();
        FakeFetchResponse response;

        PendingPoll(String stream, List<FetchEntry> entries) {
            this.stream = stream;
            this.entries = entries;
        }
    }

    /** A response that counts itself open until closed. */
    private final class FakeFetchResponse implements FetchResponse {
        final List<StreamletFetch> results;
        boolean closed;

        FakeFetchResponse(List<StreamletFetch> results) {
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

    /** A stream: its streamlets and segment geometry. */
    private static final class FakeStream {
        final List<FakeStreamlet> streamlets = new ArrayList<>();
        final int segmentBytes;
        final int segmentsPerGroup;

        FakeStream(int streamlets, int segmentBytes, int segmentsPerGroup) {
            this.segmentBytes = segmentBytes;
            this.segmentsPerGroup = segmentsPerGroup;
            for (int i = 0; i < streamlets; i++) {
                this.streamlets.add(new FakeStreamlet(segmentBytes, segmentsPerGroup));
            }
        }
    }

    /** One appended chunk and where it is. */
    private static final class StoredChunk {
        final Position position;
        final Position end;
        final byte[] bytes;
        final long timestamp;

        StoredChunk(Position position, byte[] bytes, long timestamp) {
            this.position = position;
            this.end =
                    new Position(
                            position.group(), position.segment(), position.offset() + bytes.length);
            this.bytes = bytes;
            this.timestamp = timestamp;
        }
    }

    /** One streamlet: chunks in segments of a fixed size, {@code segmentsPerGroup} per group. */
    private static final class FakeStreamlet {
        final int segmentBytes;
        final int segmentsPerGroup;
        final List<StoredChunk> chunks = new ArrayList<>();
        final Map<Position, Integer> startIndex = new HashMap<>();
        final Map<Position, Integer> endIndex = new HashMap<>();
        long group;
        long segment;
        int segmentsInGroup;
        int offset;

        FakeStreamlet(int segmentBytes, int segmentsPerGroup) {
            this.segmentBytes = segmentBytes;
            this.segmentsPerGroup = segmentsPerGroup;
        }

        Position append(byte[] chunk, long timestamp) {
            if (segment == 0 || offset + chunk.length > segmentBytes) {
                segment++; // segment ids grow streamlet-wide
                offset = 0;
                if (group == 0 || segmentsInGroup == segmentsPerGroup) {
                    group++;
                    segmentsInGroup = 0;
                }
                segmentsInGroup++;
            }
            StoredChunk c = new StoredChunk(new Position(group, segment, offset), chunk, timestamp);
            offset += chunk.length;
            startIndex.put(c.position, chunks.size());
            endIndex.put(c.end, chunks.size() + 1);
            chunks.add(c);
            return c.position;
        }

        Position tail() {
            return chunks.isEmpty() ? Position.EARLIEST : chunks.get(chunks.size() - 1).end;
        }

        Position head() {
            return chunks.isEmpty() ? Position.EARLIEST : chunks.get(0).position;
        }

        StreamletMetadata metadata(int streamlet) {
            List<GroupMetadata> groups = new ArrayList<>();
            if (!chunks.isEmpty()) {
                groups.add(new GroupMetadata(group, false, segment, 1, offset));
            }
            return new StreamletMetadata(streamlet, head(), tail(), groups);
        }

        StreamletFetch read(FetchEntry e) {
            int from;
            Position asked = e.position();
            if (asked.isEarliest()) {
                from = 0;
            } else if (startIndex.containsKey(asked)) {
                from = startIndex.get(asked);
            } else if (endIndex.containsKey(asked)) {
                from = endIndex.get(asked);
            } else {
                return new StreamletFetch(
                        e.streamlet(),
                        StatusCode.POSITION_OUT_OF_RANGE,
                        "no chunk at " + asked,
                        asked,
                        Position.EARLIEST,
                        List.of());
            }
            List<ChunkBlock> blocks = new ArrayList<>();
            long taken = 0;
            int i = from;
            ByteArrayOutputStream current = null;
            Position blockAt = null;
            while (i < chunks.size()) {
                StoredChunk c = chunks.get(i);
                if (taken > 0 && taken + c.bytes.length > Integer.toUnsignedLong(e.maxBytes())) {
                    break;
                }
                if (current == null || c.position.segment() != blockAt.segment()) {
                    if (current != null) {
                        blocks.add(block(blockAt, current));
                    }
                    current = new ByteArrayOutputStream();
                    blockAt = c.position;
                }
                current.writeBytes(c.bytes);
                taken += c.bytes.length;
                i++;
            }
            if (current != null) {
                blocks.add(block(blockAt, current));
            }
            Position next;
            if (i > from) {
                next = chunks.get(i - 1).end;
            } else {
                next = asked.isEarliest() ? head() : asked;
            }
            return new StreamletFetch(e.streamlet(), StatusCode.OK, "", next, tail(), blocks);
        }

        private static ChunkBlock block(Position at, ByteArrayOutputStream bytes) {
            return new ChunkBlock(
                    at,
                    ByteBuffer.wrap(bytes.toByteArray())
                            .asReadOnlyBuffer()
                            .order(ByteOrder.LITTLE_ENDIAN));
        }
    }
}
