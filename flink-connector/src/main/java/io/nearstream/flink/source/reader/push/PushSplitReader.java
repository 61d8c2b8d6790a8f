package io.nearstream.flink.source.reader.push;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.Position;
import io.nearstream.client.PushSplitStart;
import io.nearstream.client.StatusCode;
import io.nearstream.client.StreamletMetadata;
import io.nearstream.flink.source.BrokerErrors;
import io.nearstream.flink.source.NearstreamSourceOptions;
import io.nearstream.flink.source.metrics.NearstreamSourceReaderMetrics;
import io.nearstream.flink.source.reader.DamagedData;
import io.nearstream.flink.source.reader.RecordRun;
import io.nearstream.flink.source.reader.SplitCursor;
import io.nearstream.flink.source.reader.WakeUpSignal;
import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry.Attachment;
import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry.Geometry;
import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry.Key;
import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry.Member;
import io.nearstream.flink.source.split.NearstreamSplit;
import io.nearstream.jni.ArrowSlotView;
import io.nearstream.jni.ShmLayout;
import io.nearstream.jni.ShmRegion;
import io.nearstream.jni.SlotRing;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;
import org.apache.flink.annotation.VisibleForTesting;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.source.reader.RecordsBySplits;
import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;
import org.apache.flink.connector.base.source.reader.splitreader.SplitReader;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsAddition;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsChange;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsRemoval;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The push-mode split reader: the broker pushes whole chunks of this reader's splits into its ring
 * of a shared memory region (docs/shm-layout.md); {@link #fetch()} waits for the next published
 * slot, maps it as an Arrow batch without a copy ({@link ArrowSlotView}) and walks its chunk map,
 * giving every record its chunk position and index, so checkpoints and exact resume are the same as
 * in pull mode: chunks before a split's position and records already emitted from the resume chunk
 * are skipped, a bounded split finishes at its stopping position.
 *
 * <p>The subscription is shared with the other push readers of the source in this JVM ({@link
 * PushSubscriptionRegistry}): the reader joins its group with its first splits, tells it when they
 * change and leaves it on {@link #close()}; it attaches to whichever ring the group's current
 * subscription gives it.
 *
 * <p>Slots are released after emission: {@link #fetch()} only walks the slot's chunk map (one step
 * per chunk) and returns a {@link PushSlotRecords} holding the loaded view; the task thread copies
 * each value into its {@code byte[]} as it emits the record, and {@link PushSlotRecords#recycle()}
 * hands the slot back. A slot is thus taken for as long as its batch waits in Flink's element queue
 * or is being emitted, so a slow task keeps its ring full and the broker skips it (backpressure).
 * Views come from a {@link SlotViewPool}; a batch dropped without recycle() gives its slot back
 * through a {@link java.lang.ref.Cleaner}; {@link #close()} never unmaps what an outstanding batch
 * still reads.
 *
 * <p>Pausing a split (watermark alignment) leaves it out of this reader's part of the subscription
 * ({@code PushUpdate}) and drops its chunks that still arrive, without advancing it; resuming puts
 * it back at the position it stopped at, from which the broker pushes again.
 *
 * <p>{@code pendingBytes}/{@code pendingRecords}: the streamlets' tails are refreshed with an
 * asynchronous Metadata RPC every {@link NearstreamSourceOptions#PUSH_PENDING_REFRESH_INTERVAL}
 * from the heartbeat scheduler and compared with the splits' positions, as pull mode does with the
 * tails its fetch responses carry.
 *
 * <p>Failures: a closed region, a changed broker epoch, a broker heartbeat older than the consumer
 * timeout, or a ring taken back by the broker fail the fetch with an {@link IOException} (Flink
 * restores from its checkpoint) - unless the group moved to a new subscription meanwhile, which the
 * reader then follows. A split whose position retention removed before it was pushed fails with
 * {@code POSITION_OUT_OF_RANGE}, as in pull mode (see {@link #failIfPositionsWereRemoved}). {@link
 * #wakeUp()} is honoured within {@value #AWAIT_MS} ms.
 *
 * <p>Runs on the split fetcher thread; only {@link #wakeUp()} is called from other threads.
 */
@Internal
public class PushSplitReader implements SplitReader<RecordRun, NearstreamSplit> {

    private static final Logger LOG = LoggerFactory.getLogger(PushSplitReader.class);

    /** Longest single wait on the ring, so wakeUp() and liveness checks run. */
    static final long AWAIT_MS = 50;

    /** Heartbeats the rings of all push readers of this JVM while their fetchers are blocked. */
    private static final ScheduledExecutorService HEARTBEATS =
            Executors.newSingleThreadScheduledExecutor(
                    r -> {
                        Thread t = new Thread(r, "nearstream-push-heartbeat");
                        t.setDaemon(true);
                        return t;
                    });

    private final NearstreamClient client;
    private final String stream;
    private final NearstreamSourceReaderMetrics metrics;
    private final PushSubscriptionRegistry registry;
    private final Key key;
    private final int subtaskIndex;
    private final Geometry geometry;
    private final long staleAfterNanos;

    /** Assigned splits by streamlet, in assignment order. */
    private final Map<Integer, PushCursor> splits = new LinkedHashMap<>();

    /** Where each split continues; read by other members when they re-subscribe the group. */
    private final Map<Integer, PushSplitStart> positions = new ConcurrentHashMap<>();

    /** Splits by streamlet for the pending-metrics refresh (any thread). */
    private final Map<Integer, PushCursor> pendingSplits = new ConcurrentHashMap<>();

    private final SlotViewPool views = new SlotViewPool();
    private final DamagedData damagedData;
    private final OversizeChunkFetcher oversizeChunks;
    private final WakeUpSignal wakeUp = new WakeUpSignal();

    @Nullable private Member member;
    @Nullable private Attachment attached;
    @Nullable private ShmRegion region;

    /**
     * The attached ring. Written by the fetcher thread under {@link #ringLock}, which the heartbeat
     * thread holds while it writes into the ring, so the region is never unmapped under it.
     */
    @Nullable private volatile SlotRing ring;

    private final Object ringLock = new Object();
    private final ScheduledFuture<?> heartbeats;
    @Nullable private final ScheduledFuture<?> pendingRefresh;
    private final AtomicBoolean tailsRequested = new AtomicBoolean();
    private final long rpcTimeoutMs;
    private volatile boolean segmentSizeKnown;
    private long waitingForRingSince;

    // Statistics (fetcher thread; read by tests and gauges).
    private volatile long slotsConsumed;
    private volatile long bytesConsumed;

    public PushSplitReader(
            NearstreamClient client,
            String stream,
            Configuration config,
            NearstreamSourceReaderMetrics metrics,
            PushSubscriptionRegistry registry,
            Key key,
            int subtaskIndex) {
        this.client = client;
        this.stream = stream;
        this.metrics = metrics;
        this.registry = registry;
        this.key = key;
        this.subtaskIndex = subtaskIndex;
        long timeoutMs = config.get(NearstreamSourceOptions.PUSH_CONSUMER_TIMEOUT).toMillis();
        this.geometry =
                new Geometry(
                        config.get(NearstreamSourceOptions.PUSH_SLOTS_PER_RING),
                        config.get(NearstreamSourceOptions.PUSH_SLOT_BYTES),
                        (int) timeoutMs,
                        config.get(NearstreamSourceOptions.REQUEST_TIMEOUT).toMillis());
        this.staleAfterNanos = TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        // The fetcher thread blocks while Flink's element queue is full (backpressure); the ring
        // is heartbeated from here too, so the broker does not reclaim it meanwhile.
        long period = Math.max(10, timeoutMs / 4);
        this.heartbeats =
                HEARTBEATS.scheduleAtFixedRate(
                        this::heartbeat, period, period, TimeUnit.MILLISECONDS);
        this.rpcTimeoutMs = config.get(NearstreamSourceOptions.REQUEST_TIMEOUT).toMillis();
        this.damagedData = new DamagedData(stream, config, metrics);
        this.oversizeChunks = new OversizeChunkFetcher(client, stream, rpcTimeoutMs);
        long refreshMs =
                config.get(NearstreamSourceOptions.PUSH_PENDING_REFRESH_INTERVAL).toMillis();
        this.pendingRefresh =
                refreshMs > 0
                        ? HEARTBEATS.scheduleWithFixedDelay(
                                this::refreshPending, 0, refreshMs, TimeUnit.MILLISECONDS)
                        : null;
        metrics.registerPushGauges(
                () -> slotsConsumed,
                () -> bytesConsumed,
                () -> ringStat(SlotRing::spinWakeups),
                () -> ringStat(SlotRing::futexSleeps),
                () -> TimeUnit.NANOSECONDS.toMillis(ringStat(SlotRing::waitNanos)));
    }

    @Override
    public RecordsWithSplitIds<RecordRun> fetch() throws IOException {
        RecordsBySplits.Builder<RecordRun> records = new RecordsBySplits.Builder<>();
        if (finishSplitsAtTheirStop(records) || splits.isEmpty()) {
            if (splits.isEmpty()) {
                wakeUp.sleep(AWAIT_MS);
            }
            return records.build();
        }
        Exception failure = member != null ? member.failure() : null;
        if (failure != null) {
            throw new IOException(failure.getMessage(), failure);
        }
        if (!attach()) {
            wakeUp.sleep(10);
            return records.build();
        }
        ring.heartbeat();
        if (!alive()) {
            return records.build(); // follows the group's new subscription on the next fetch
        }
        if (wakeUp.consume()) {
            return records.build();
        }
        ring.await(AWAIT_MS * 1_000_000L);
        // Read before looking at the ring: a push pass that began after this heartbeat has
        // published whatever it had read (see failIfPositionsWereRemoved).
        long heartbeat = region.brokerHeartbeatNanos();
        long position = ring.tryNext();
        if (position >= 0) {
            return readSlot(position);
        }
        failIfPositionsWereRemoved(heartbeat);
        return records.build();
    }

    /**
     * A split whose position retention removed before the broker pushed it would wait forever: the
     * broker cannot read it (it logs that and drops the split from its passes). It is failed with
     * {@code POSITION_OUT_OF_RANGE}, as a pull fetch of that position is, once all of these hold: a
     * Metadata answer (the pending refresh) put the streamlet's head beyond the split's position;
     * the split has not moved since; the broker began a push pass after that Metadata was asked
     * ({@code heartbeatBeforeLooking}, read before the ring was found empty) - a pass that had read
     * the chunk before it was removed publishes it before the next pass begins - and the ring is
     * empty now. Requires the pending refresh (on by default).
     */
    private void failIfPositionsWereRemoved(long heartbeatBeforeLooking) {
        for (PushCursor s : splits.values()) {
            BeyondHead b = s.beyondHead;
            if (b != null
                    && b.position().equals(s.position)
                    && heartbeatBeforeLooking - b.askedAtNanos() > 0) {
                metrics.fetchFailed();
                throw BrokerErrors.fatal(
                        "Push of stream '" + stream + "' streamlet " + s.streamlet,
                        StatusCode.POSITION_OUT_OF_RANGE,
                        "position "
                                + b.position()
                                + " is before the streamlet's head "
                                + b.head()
                                + " (the reader fell behind retention)");
            }
        }
    }

    /**
     * Asks the streamlets' tails without waiting (heartbeat thread) and, when they come, updates
     * the pending metrics from each split's position at that moment. One request at a time.
     */
    private void refreshPending() {
        if (pendingSplits.isEmpty() || !tailsRequested.compareAndSet(false, true)) {
            return;
        }
        try {
            if (!segmentSizeKnown) {
                client.describeStream(stream)
                        .orTimeout(rpcTimeoutMs, TimeUnit.MILLISECONDS)
                        .whenComplete(
                                (config, error) -> {
                                    if (config != null) {
                                        segmentSizeKnown = true;
                                        metrics.setSegmentBytes(
                                                Integer.toUnsignedLong(config.segmentBytes()));
                                    } else {
                                        // Metrics only: the fetch path reports broker errors.
                                        LOG.debug("Segment size of {} unknown", stream, error);
                                    }
                                });
            }
            long askedAt = System.nanoTime();
            client.metadata(stream)
                    .orTimeout(rpcTimeoutMs, TimeUnit.MILLISECONDS)
                    .whenComplete(
                            (streamlets, error) -> {
                                try {
                                    if (streamlets != null) {
                                        updatePending(streamlets, askedAt);
                                    } else {
                                        LOG.debug("Tails of stream {} unknown", stream, error);
                                    }
                                } finally {
                                    tailsRequested.set(false);
                                }
                            });
        } catch (RuntimeException e) {
            tailsRequested.set(false); // e.g. the client is closed; the next period tries again
            LOG.debug("Cannot ask the tails of stream {}", stream, e);
        }
    }

    private void updatePending(List<StreamletMetadata> streamlets, long askedAt) {
        for (StreamletMetadata m : streamlets) {
            PushCursor s = pendingSplits.get(m.streamlet());
            if (s == null) {
                continue;
            }
            Position next = s.next;
            if (!next.isEarliest() && m.head().compareTo(next) > 0) {
                BeyondHead seen = s.beyondHead;
                if (seen == null || !seen.position().equals(next)) {
                    s.beyondHead = new BeyondHead(next, m.head(), askedAt);
                }
            } else {
                s.beyondHead = null;
            }
            synchronized (s) {
                if (!s.removed) { // a split removed meanwhile must not come back in the gauges
                    metrics.updatePending(s.splitId, s.next, m.tail());
                }
            }
        }
    }

    /** A statistic of the attached ring (counted since it was attached), 0 when none is. */
    private long ringStat(java.util.function.ToLongFunction<SlotRing> stat) {
        SlotRing r = ring;
        return r != null ? stat.applyAsLong(r) : 0;
    }

    private void heartbeat() {
        synchronized (ringLock) {
            SlotRing r = ring;
            if (r != null) {
                r.heartbeat();
            }
        }
    }

    /** Attaches to the ring of the group's current subscription; false while there is none yet. */
    private boolean attach() throws IOException {
        Attachment a = member.attachment();
        if (a == null) {
            return false;
        }
        if (attached != null && a.generation() == attached.generation()) {
            return true;
        }
        try {
            return attach(a);
        } catch (IOException | RuntimeException e) {
            if (member.attachment() != a) {
                // The group moved on while we attached (the region may be unlinked already).
                LOG.debug("Push subscription {} replaced while attaching", a, e);
                detach();
                return false;
            }
            throw e;
        }
    }

    private boolean attach(Attachment a) throws IOException {
        if (region == null || !region.path().equals(Path.of(a.regionPath()))) {
            detach();
            region = ShmRegion.map(Path.of(a.regionPath()));
            waitingForRingSince = System.nanoTime();
        }
        if (region.brokerEpoch() != a.brokerEpoch()) {
            throw new IOException(
                    "push region "
                            + a.regionPath()
                            + " has broker epoch "
                            + region.brokerEpoch()
                            + ", the subscription was made with "
                            + a.brokerEpoch());
        }
        SlotRing r = region.ring(a.ringIndex());
        if (r.state() != ShmLayout.RING_ACTIVE) {
            if (System.nanoTime() - waitingForRingSince > staleAfterNanos) {
                throw new IOException(
                        "ring " + a.ringIndex() + " of " + a.regionPath() + " never became active");
            }
            return false;
        }
        if (r.subtaskIndex() != subtaskIndex) {
            throw new IOException(
                    "ring "
                            + a.ringIndex()
                            + " of "
                            + a.regionPath()
                            + " belongs to subtask "
                            + r.subtaskIndex()
                            + ", not "
                            + subtaskIndex);
        }
        synchronized (ringLock) {
            ring = r.attach();
        }
        attached = a;
        LOG.info("Subtask {} reads ring {} of {}", subtaskIndex, a.ringIndex(), a.regionPath());
        return true;
    }

    /**
     * Fails when the broker is gone or took the ring back, unless the group has moved to a new
     * subscription (then detaches and returns false).
     */
    private boolean alive() throws IOException {
        IOException problem = null;
        try {
            region.checkBrokerAlive(staleAfterNanos);
            if (ring.detached()) {
                problem =
                        new IOException(
                                "ring " + ring.index() + " of " + region.path() + " was reclaimed");
            }
        } catch (IOException e) {
            problem = e;
        }
        if (problem == null) {
            return true;
        }
        Attachment now = member.attachment();
        if (now != null && now.generation() != attached.generation()) {
            detach();
            return false;
        }
        metrics.fetchFailed();
        throw problem;
    }

    /**
     * Decides which rows of the slot each split emits (one step per chunk) and hands the slot to
     * Flink in a {@link PushSlotRecords}; a slot with nothing to emit is released at once.
     */
    private RecordsWithSplitIds<RecordRun> readSlot(long position) throws IOException {
        int flags = ring.flags(position);
        if (flags != 0) {
            return readMarker(position, flags);
        }
        long bytes = 0;
        boolean splitsFinished = false;
        PushSlotRecords.Builder batch = new PushSlotRecords.Builder();
        ArrowSlotView view = views.take();
        boolean handedOver = false;
        try {
            view.load(ring, position);
            int rows = view.vector().getValueCount();
            int chunks = ring.chunkCount(position);
            int row = 0;
            for (int c = 0; c < chunks; c++) {
                int streamlet = ring.chunkStreamlet(position, c);
                int recordCount = ring.chunkRecordCount(position, c);
                int chunkBytes = ring.chunkBytes(position, c);
                Position at =
                        new Position(
                                ring.chunkGroup(position, c),
                                ring.chunkSegment(position, c),
                                ring.chunkBytePosition(position, c));
                int first = row;
                row += recordCount;
                if (recordCount < 0 || row > rows) {
                    throw new IOException(
                            "slot "
                                    + position
                                    + " of ring "
                                    + ring.index()
                                    + ": its chunk map counts more records than its "
                                    + rows
                                    + " rows");
                }
                PushCursor s = splits.get(streamlet);
                if (s == null || s.paused || at.compareTo(s.position) < 0) {
                    // Not ours (any more), paused (pushed again from its position on resume), or
                    // emitted before a restore/re-subscribe.
                    continue;
                }
                if (s.stopsAt(at)) {
                    finish(s, batch::addFinishedSplit);
                    splitsFinished = true;
                    continue;
                }
                int skip = Math.min(s.takeRecordsToSkip(at), recordCount);
                if (skip < recordCount) {
                    // The chunk's first-record timestamp, as pull mode takes it from the header.
                    long timestampMs = ring.chunkFirstTimestampMs(position, c);
                    batch.add(
                            s.splitId,
                            new PushSlotRecords.ChunkRun(
                                    streamlet,
                                    at,
                                    timestampMs,
                                    first + skip,
                                    skip,
                                    recordCount - skip));
                }
                bytes += chunkBytes;
                s.advance(new Position(at.group(), at.segment(), at.offset() + chunkBytes));
                if (s.finished()) {
                    finish(s, batch::addFinishedSplit);
                    splitsFinished = true;
                }
            }
            slotsConsumed++;
            bytesConsumed += bytes;
            metrics.fetchCompleted(bytes, batch.records());
            if (batch.hasRecords()) {
                PushSlotRecords built = batch.build(view, views);
                handedOver = true;
                return built;
            }
        } finally {
            if (!handedOver) {
                views.giveBack(view); // nothing to emit (or a bad slot): the slot goes back now
            }
            if (splitsFinished) {
                member.splitsChanged();
            }
        }
        RecordsBySplits.Builder<RecordRun> finishedOnly = new RecordsBySplits.Builder<>();
        batch.finishedSplits().forEach(finishedOnly::addFinishedSplit);
        return finishedOnly.build();
    }

    /**
     * A marker slot (docs/shm-layout.md): no rows, one chunk map entry that stands in its split's
     * order like a chunk. {@code SLOT_FETCH_CHUNK}: a chunk too large for this region's slots, read
     * here with one Fetch RPC (the broker keeps it in its segment); {@code SLOT_DAMAGED}: a range
     * the broker's recovery found damaged, which fails the job unless told to skip it. The slot
     * goes back to the broker at once: nothing of it is handed to Flink.
     */
    private RecordsWithSplitIds<RecordRun> readMarker(long position, int flags) throws IOException {
        RecordsBySplits.Builder<RecordRun> out = new RecordsBySplits.Builder<>();
        boolean splitsFinished = false;
        try {
            if (ring.chunkCount(position) != 1 || ring.rowCount(position) != 0) {
                throw new IOException(
                        "slot "
                                + position
                                + " of ring "
                                + ring.index()
                                + " is a marker (flags "
                                + flags
                                + ") with "
                                + ring.chunkCount(position)
                                + " chunk map entries and "
                                + ring.rowCount(position)
                                + " rows, not 1 and 0");
            }
            int streamlet = ring.chunkStreamlet(position, 0);
            int bytes = ring.chunkBytes(position, 0);
            Position at =
                    new Position(
                            ring.chunkGroup(position, 0),
                            ring.chunkSegment(position, 0),
                            ring.chunkBytePosition(position, 0));
            Position end = new Position(at.group(), at.segment(), at.offset() + bytes);
            PushCursor s = splits.get(streamlet);
            if (s == null || s.paused || at.compareTo(s.position) < 0) {
                return out.build(); // as for a chunk: not ours, paused, or read before
            }
            if (s.stopsAt(at)) {
                finish(s, out::addFinishedSplit);
                splitsFinished = true;
                return out.build();
            }
            if (flags == ShmLayout.SLOT_DAMAGED) {
                s.advance(
                        damagedData.reached(
                                streamlet,
                                at,
                                end,
                                bytes
                                        + " bytes from "
                                        + at
                                        + " to "
                                        + end
                                        + " were found damaged when the broker recovered; the"
                                        + " records there are lost"));
            } else if (flags == ShmLayout.SLOT_FETCH_CHUNK) {
                List<RecordRun> runs = oversizeChunks.read(streamlet, at, bytes, s);
                metrics.pushChunkFetched();
                long records = 0;
                for (RecordRun run : runs) {
                    records += run.size();
                }
                if (!runs.isEmpty()) {
                    out.addAll(s.splitId, runs);
                }
                metrics.fetchCompleted(bytes, records);
                bytesConsumed += bytes;
                s.advance(end);
            } else {
                throw new IOException(
                        "slot "
                                + position
                                + " of ring "
                                + ring.index()
                                + " has unknown flags "
                                + flags
                                + " (a newer broker?)");
            }
            if (s.finished()) {
                finish(s, out::addFinishedSplit);
                splitsFinished = true;
            }
            return out.build();
        } finally {
            slotsConsumed++;
            ring.release(position);
            if (splitsFinished) {
                member.splitsChanged();
            }
        }
    }

    /** Splits whose position is at or beyond their stopping position finish without data. */
    private boolean finishSplitsAtTheirStop(RecordsBySplits.Builder<RecordRun> records) {
        boolean finishedAny = false;
        Iterator<PushCursor> it = new ArrayList<>(splits.values()).iterator();
        while (it.hasNext()) {
            PushCursor s = it.next();
            if (s.finished()) {
                finish(s, records::addFinishedSplit);
                finishedAny = true;
            }
        }
        if (finishedAny && member != null) {
            member.splitsChanged();
        }
        return finishedAny;
    }

    private void finish(PushCursor s, Consumer<String> finishedSplits) {
        remove(s);
        finishedSplits.accept(s.splitId);
        LOG.info("Split {} reached its stopping position {}", s.splitId, s.stop);
    }

    @Override
    public void handleSplitsChanges(SplitsChange<NearstreamSplit> splitsChanges) {
        if (splitsChanges instanceof SplitsAddition) {
            for (NearstreamSplit split : splitsChanges.splits()) {
                if (!split.stream().equals(stream)) {
                    throw new IllegalArgumentException(
                            "split " + split + " belongs to stream '" + split.stream() + "'");
                }
                PushCursor s = new PushCursor(split);
                splits.put(split.streamlet(), s);
                positions.put(s.streamlet, new PushSplitStart(s.streamlet, s.position));
                pendingSplits.put(s.streamlet, s);
                LOG.info("Reading split {} (push)", split);
            }
        } else if (splitsChanges instanceof SplitsRemoval) {
            for (NearstreamSplit split : splitsChanges.splits()) {
                PushCursor s = splits.get(split.streamlet());
                if (s != null) {
                    remove(s);
                }
            }
        } else {
            throw new UnsupportedOperationException(
                    "Unsupported splits change " + splitsChanges.getClass().getName());
        }
        if (member == null) {
            member = registry.join(key, subtaskIndex, client, geometry, this::currentPositions);
        } else {
            member.splitsChanged();
        }
    }

    /** Forgets a split that finished or was taken away. */
    private void remove(PushCursor s) {
        splits.remove(s.streamlet);
        positions.remove(s.streamlet);
        pendingSplits.remove(s.streamlet);
        synchronized (s) {
            s.removed = true;
            metrics.removeSplit(s.splitId);
        }
    }

    /**
     * Watermark alignment: a paused split leaves this reader's part of the subscription, so the
     * broker stops pushing it; its chunks still in flight are dropped without advancing it. A
     * resumed split rejoins at the position it stopped at, which a split new to the subscription is
     * pushed from (docs/protocol.md, PushUpdate).
     */
    @Override
    public void pauseOrResumeSplits(
            Collection<NearstreamSplit> splitsToPause, Collection<NearstreamSplit> splitsToResume) {
        boolean changed = false;
        for (NearstreamSplit split : splitsToPause) {
            PushCursor s = splits.get(split.streamlet());
            if (s != null && !s.paused) {
                s.paused = true;
                positions.remove(s.streamlet);
                changed = true;
            }
        }
        for (NearstreamSplit split : splitsToResume) {
            PushCursor s = splits.get(split.streamlet());
            if (s != null && s.paused) {
                s.paused = false;
                positions.put(s.streamlet, new PushSplitStart(s.streamlet, s.position));
                changed = true;
            }
        }
        if (changed && member != null) {
            member.splitsChanged();
        }
    }

    /** The splits with the chunk positions they continue at, paused ones left out (any thread). */
    private List<PushSplitStart> currentPositions() {
        return new ArrayList<>(positions.values());
    }

    @Override
    public void wakeUp() {
        wakeUp.wakeUp();
    }

    /** Stops reading the ring; batches of its slots still held release them when recycled. */
    private void detach() {
        attached = null;
        synchronized (ringLock) {
            ring = null;
            if (region != null) {
                region.close();
                region = null;
            }
        }
    }

    @Override
    public void close() throws Exception {
        boolean closeClient = true;
        try {
            if (member != null) {
                // The group may keep our connection: it carries the subscription of the others.
                closeClient = member.leave();
            }
        } finally {
            heartbeats.cancel(false);
            if (pendingRefresh != null) {
                pendingRefresh.cancel(false);
            }
            detach();
            views.close(); // outstanding batches keep their view (and mapping) until recycled
            if (closeClient) {
                client.close();
            }
        }
    }

    /** Where each assigned split continues (for tests). */
    @VisibleForTesting
    Map<String, Position> positions() {
        Map<String, Position> out = new HashMap<>();
        splits.values().forEach(s -> out.put(s.splitId, s.position));
        return out;
    }

    @VisibleForTesting
    long slotsConsumed() {
        return slotsConsumed;
    }

    @VisibleForTesting
    SlotViewPool slotViews() {
        return views;
    }

    /** A Metadata answer, asked at {@code askedAtNanos}, had the head beyond the position. */
    private record BeyondHead(Position position, Position head, long askedAtNanos) {}

    /** Push-specific state of a split: its position is also what a re-subscribe starts from. */
    private final class PushCursor extends SplitCursor {
        /** {@link #position} for the pending-metrics refresh, which runs on another thread. */
        volatile Position next;

        /** Set by the pending refresh while the head is beyond {@link #next}; else null. */
        @Nullable volatile BeyondHead beyondHead;

        /** Guarded by this: set when the split leaves, so its pending gauge is not re-added. */
        boolean removed;

        /** Paused by watermark alignment (fetcher thread). */
        boolean paused;

        PushCursor(NearstreamSplit split) {
            super(split);
            this.next = position;
        }

        void advance(Position next) {
            position = next;
            this.next = next;
            if (!paused) {
                positions.put(streamlet, new PushSplitStart(streamlet, next));
            }
        }
    }
}
