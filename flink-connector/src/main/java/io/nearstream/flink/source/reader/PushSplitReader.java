package io.nearstream.flink.source.reader;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NearstreamRecord;
import io.nearstream.client.Position;
import io.nearstream.client.PushSplitStart;
import io.nearstream.flink.source.NearstreamSourceOptions;
import io.nearstream.flink.source.metrics.NearstreamSourceReaderMetrics;
import io.nearstream.flink.source.reader.PushSubscriptionRegistry.Attachment;
import io.nearstream.flink.source.reader.PushSubscriptionRegistry.Geometry;
import io.nearstream.flink.source.reader.PushSubscriptionRegistry.Key;
import io.nearstream.flink.source.reader.PushSubscriptionRegistry.Member;
import io.nearstream.flink.source.split.NearstreamSplit;
import io.nearstream.jni.ArrowSlotView;
import io.nearstream.jni.ShmLayout;
import io.nearstream.jni.ShmRegion;
import io.nearstream.jni.SlotRing;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
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
import javax.annotation.Nullable;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VarBinaryVector;
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
 * <p>Each record is copied into its own {@code byte[]} and the slot is released right after, before
 * the records are handed to Flink (DESIGN.md prefers releasing in {@code
 * RecordsWithSplitIds.recycle()}, which would save that copy; not done yet).
 *
 * <p>Failures: a closed region, a changed broker epoch, a broker heartbeat older than the consumer
 * timeout, or a ring taken back by the broker fail the fetch with an {@link IOException} (Flink
 * restores from its checkpoint) - unless the group moved to a new subscription meanwhile, which the
 * reader then follows. {@link #wakeUp()} is honoured within {@value #AWAIT_MS} ms.
 *
 * <p>Runs on the split fetcher thread; only {@link #wakeUp()} is called from other threads.
 */
@Internal
public class PushSplitReader implements SplitReader<NearstreamRecord, NearstreamSplit> {

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

    private final BufferAllocator allocator = new RootAllocator();
    private final ArrowSlotView view = new ArrowSlotView(allocator);
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
        metrics.registerPushGauges(
                () -> slotsConsumed,
                () -> bytesConsumed,
                () -> ringStat(SlotRing::spinWakeups),
                () -> ringStat(SlotRing::futexSleeps),
                () -> TimeUnit.NANOSECONDS.toMillis(ringStat(SlotRing::waitNanos)));
    }

    @Override
    public RecordsWithSplitIds<NearstreamRecord> fetch() throws IOException {
        RecordsBySplits.Builder<NearstreamRecord> records = new RecordsBySplits.Builder<>();
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
        if (wakeUp.consume() || !ring.await(AWAIT_MS * 1_000_000L)) {
            return records.build();
        }
        long position = ring.tryNext();
        if (position >= 0) {
            readSlot(position, records);
        }
        return records.build();
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

    private void readSlot(long position, RecordsBySplits.Builder<NearstreamRecord> records)
            throws IOException {
        long bytes = 0;
        long count = 0;
        boolean splitsFinished = false;
        try {
            view.load(ring, position);
            VarBinaryVector values = view.vector();
            int chunks = ring.chunkCount(position);
            int row = 0;
            for (int c = 0; c < chunks; c++) {
                int streamlet = ring.chunkStreamlet(position, c);
                int recordCount = ring.chunkRecordCount(position, c);
                int chunkBytes = ring.chunkBytes(position, c);
                // The chunk's first-record timestamp, as pull mode takes it from the chunk header.
                long timestampMs = ring.chunkFirstTimestampMs(position, c);
                Position at =
                        new Position(
                                ring.chunkGroup(position, c),
                                ring.chunkSegment(position, c),
                                ring.chunkBytePosition(position, c));
                int first = row;
                row += recordCount;
                if (row > values.getValueCount()) {
                    throw new IOException(
                            "slot "
                                    + position
                                    + " of ring "
                                    + ring.index()
                                    + ": its chunk map counts more records than its "
                                    + values.getValueCount()
                                    + " rows");
                }
                PushCursor s = splits.get(streamlet);
                if (s == null || at.compareTo(s.position) < 0) {
                    continue; // not ours (any more), or emitted before a restore/re-subscribe
                }
                if (s.stopsAt(at)) {
                    finish(s, records);
                    splitsFinished = true;
                    continue;
                }
                int skip = Math.min(s.takeRecordsToSkip(at), recordCount);
                List<NearstreamRecord> out = new ArrayList<>(recordCount - skip);
                for (int i = skip; i < recordCount; i++) {
                    byte[] value = values.isNull(first + i) ? new byte[0] : values.get(first + i);
                    out.add(new NearstreamRecord(streamlet, at, i, timestampMs, value));
                }
                records.addAll(s.splitId, out);
                count += out.size();
                bytes += chunkBytes;
                s.advance(new Position(at.group(), at.segment(), at.offset() + chunkBytes));
                if (s.finished()) {
                    finish(s, records);
                    splitsFinished = true;
                }
            }
        } finally {
            view.clear(); // hands the slot back: every record was copied
        }
        slotsConsumed++;
        bytesConsumed += bytes;
        metrics.fetchCompleted(bytes, count);
        if (splitsFinished) {
            member.splitsChanged();
        }
    }

    /** Splits whose position is at or beyond their stopping position finish without data. */
    private boolean finishSplitsAtTheirStop(RecordsBySplits.Builder<NearstreamRecord> records) {
        boolean finishedAny = false;
        Iterator<PushCursor> it = new ArrayList<>(splits.values()).iterator();
        while (it.hasNext()) {
            PushCursor s = it.next();
            if (s.finished()) {
                finish(s, records);
                finishedAny = true;
            }
        }
        if (finishedAny && member != null) {
            member.splitsChanged();
        }
        return finishedAny;
    }

    private void finish(PushCursor s, RecordsBySplits.Builder<NearstreamRecord> records) {
        splits.remove(s.streamlet);
        positions.remove(s.streamlet);
        metrics.removeSplit(s.splitId);
        records.addFinishedSplit(s.splitId);
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
                LOG.info("Reading split {} (push)", split);
            }
        } else if (splitsChanges instanceof SplitsRemoval) {
            for (NearstreamSplit split : splitsChanges.splits()) {
                if (splits.remove(split.streamlet()) != null) {
                    positions.remove(split.streamlet());
                    metrics.removeSplit(split.splitId());
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

    /** The splits with the chunk positions they continue at (any thread). */
    private List<PushSplitStart> currentPositions() {
        return new ArrayList<>(positions.values());
    }

    @Override
    public void wakeUp() {
        wakeUp.wakeUp();
    }

    private void detach() {
        view.clear();
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
            detach();
            view.close();
            allocator.close();
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

    /** Push-specific state of a split: its position is also what a re-subscribe starts from. */
    private final class PushCursor extends SplitCursor {
        PushCursor(NearstreamSplit split) {
            super(split);
        }

        void advance(Position next) {
            position = next;
            positions.put(streamlet, new PushSplitStart(streamlet, next));
        }
    }
}
