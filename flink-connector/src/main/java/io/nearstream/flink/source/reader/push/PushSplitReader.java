package io.nearstream.flink.source.reader.push;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.Position;
import io.nearstream.client.PushSplitStart;
import io.nearstream.client.RecordFilter;
import io.nearstream.client.SlotFormat;
import io.nearstream.flink.source.NearstreamSourceOptions;
import io.nearstream.flink.source.metrics.NearstreamSourceReaderMetrics;
import io.nearstream.flink.source.reader.DamagedData;
import io.nearstream.flink.source.reader.RecordRun;
import io.nearstream.flink.source.reader.WakeUpSignal;
import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry.Geometry;
import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry.Key;
import io.nearstream.flink.source.split.NearstreamSplit;
import io.nearstream.jni.ArrowSlotView;
import io.nearstream.jni.ShmLayout;
import io.nearstream.jni.SlotRing;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;
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
 * <p>The subscription is shared with the other push readers of the source on this host ({@link
 * PushSubscriptionRegistry}): the reader joins its host's group with its first splits - directly
 * when its JVM holds the group, through the enumerator ({@link RelayedMembership}) when another
 * TaskManager JVM of the host does ({@link PushElection}) - tells it when they change and leaves it
 * on {@link #close()}; it attaches to whichever ring the group's current subscription gives it.
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
 * <p>The concerns around the slots live apart: {@link RingSession} (attach, liveness, heartbeat,
 * detach), {@link PushPending} (pending metrics from periodic Metadata, and the retention loss they
 * reveal), marker slots through {@link DamagedData} and {@link OversizeChunkFetcher}. The ring
 * heartbeat and the pending refresh run on the group's scheduler ({@link PushMembership#schedule}),
 * which ends with the membership, i.e. with the job. {@link #wakeUp()} is honoured within {@value
 * #AWAIT_MS} ms.
 *
 * <p>Runs on the split fetcher thread; only {@link #wakeUp()} is called from other threads.
 */
@Internal
public class PushSplitReader implements SplitReader<RecordRun, NearstreamSplit> {

    private static final Logger LOG = LoggerFactory.getLogger(PushSplitReader.class);

    /** Longest single wait on the ring, so wakeUp() and liveness checks run. */
    static final long AWAIT_MS = 50;

    /**
     * How long a relayed reader waits for its ring: the holding group waits up to {@link
     * PushSubscriptionRegistry#PEER_WAIT_MS} for its peers, then subscribes.
     */
    static final long RELAYED_ANSWER_TIMEOUT_MS = 3 * PushSubscriptionRegistry.PEER_WAIT_MS;

    /** Metadata for the pending metrics, Fetch for chunks too large for a slot. */
    private final NearstreamClient client;

    /**
     * Opens the connection this reader brings to its group when it joins in its own JVM (the
     * group's subscription goes over the lowest member's): {@link #client} itself for one broker;
     * over a cluster, a connection to the group's broker.
     */
    private final Supplier<NearstreamClient> groupConnection;

    /** The connection given to the group, once this reader joined it in its own JVM. */
    @Nullable private NearstreamClient joinedWith;

    private final String stream;
    private final NearstreamSourceReaderMetrics metrics;
    private final PushSubscriptionRegistry registry;
    private final PushElection election;
    private final Key key;
    private final int subtaskIndex;
    private final Geometry geometry;
    private final long staleAfterNanos;
    private final long heartbeatPeriodMs;
    private final long pendingRefreshMs;

    /** Assigned splits by streamlet, in assignment order. */
    private final Map<Integer, PushCursor> splits = new LinkedHashMap<>();

    /** Where each split continues; read by other members when they re-subscribe the group. */
    private final Map<Integer, PushSplitStart> positions = new ConcurrentHashMap<>();

    private final SlotViewPool views = new SlotViewPool();
    private final PushPending pending;
    private final DamagedData damagedData;
    private final OversizeChunkFetcher oversizeChunks;
    private final WakeUpSignal wakeUp = new WakeUpSignal();

    /** Set when the reader joins its host's group with its first splits. */
    @Nullable private PushMembership member;

    @Nullable private RingSession session;
    private final List<ScheduledFuture<?>> scheduled = new ArrayList<>(2);

    // Statistics (fetcher thread; read by tests and gauges).
    private volatile long slotsConsumed;
    private volatile long bytesConsumed;

    /** A reader of one broker: its own connection carries its group's subscription. */
    public PushSplitReader(
            NearstreamClient client,
            String stream,
            Configuration config,
            NearstreamSourceReaderMetrics metrics,
            PushSubscriptionRegistry registry,
            PushElection election,
            Key key,
            int subtaskIndex) {
        this(
                client,
                () -> client,
                stream,
                config,
                geometry(config),
                metrics,
                registry,
                election,
                key,
                subtaskIndex);
    }

    /**
     * @param client the reader's connection for Metadata and Fetch
     * @param groupConnection opens the connection the reader brings to its group (may return {@code
     *     client}); over a cluster, one to the group's broker, which may be an in-sync follower
     *     that the cluster client would not route to
     * @param geometry the settings of the group's subscriptions
     */
    public PushSplitReader(
            NearstreamClient client,
            Supplier<NearstreamClient> groupConnection,
            String stream,
            Configuration config,
            Geometry geometry,
            NearstreamSourceReaderMetrics metrics,
            PushSubscriptionRegistry registry,
            PushElection election,
            Key key,
            int subtaskIndex) {
        this.client = client;
        this.groupConnection = groupConnection;
        this.election = election;
        this.stream = stream;
        this.metrics = metrics;
        this.registry = registry;
        this.key = key;
        this.subtaskIndex = subtaskIndex;
        long timeoutMs = config.get(NearstreamSourceOptions.PUSH_CONSUMER_TIMEOUT).toMillis();
        this.geometry = geometry;
        this.staleAfterNanos = TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        this.heartbeatPeriodMs = Math.max(10, timeoutMs / 4);
        this.pendingRefreshMs =
                config.get(NearstreamSourceOptions.PUSH_PENDING_REFRESH_INTERVAL).toMillis();
        long rpcTimeoutMs = config.get(NearstreamSourceOptions.REQUEST_TIMEOUT).toMillis();
        this.pending = new PushPending(client, stream, metrics);
        this.damagedData = new DamagedData(stream, config, metrics);
        this.oversizeChunks =
                new OversizeChunkFetcher(client, stream, rpcTimeoutMs, geometry.filter());
        metrics.registerPushGauges(
                () -> slotsConsumed,
                () -> bytesConsumed,
                () -> ringStat(SlotRing::spinWakeups),
                () -> ringStat(SlotRing::futexSleeps),
                () -> TimeUnit.NANOSECONDS.toMillis(ringStat(SlotRing::waitNanos)));
    }

    /** The ring geometry and timeouts of a push subscription made with {@code config}. */
    public static Geometry geometry(Configuration config) {
        return geometry(config, false);
    }

    /**
     * {@link #geometry(Configuration)}, sent as a replica read when {@code replicaRead} (the
     * group's broker may be an in-sync follower of the streamlets, docs/cluster.md "Follower
     * reads").
     */
    public static Geometry geometry(Configuration config, boolean replicaRead) {
        return new Geometry(
                config.get(NearstreamSourceOptions.PUSH_SLOTS_PER_RING),
                config.get(NearstreamSourceOptions.PUSH_SLOT_BYTES),
                (int) config.get(NearstreamSourceOptions.PUSH_CONSUMER_TIMEOUT).toMillis(),
                config.get(NearstreamSourceOptions.REQUEST_TIMEOUT).toMillis(),
                RecordFilter.parseSpec(config.get(NearstreamSourceOptions.RECORD_FILTER)),
                SlotFormat.parse(config.get(NearstreamSourceOptions.PUSH_SLOT_FORMAT)),
                replicaRead);
    }

    private long ringStat(ToLongFunction<SlotRing> stat) {
        RingSession s = session;
        return s != null ? s.stat(stat) : 0;
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
        if (member == null && !join()) {
            wakeUp.sleep(10); // the enumerator's word on where the host's subscription lives
            return records.build();
        }
        Exception failure = member.failure();
        if (failure != null) {
            throw new IOException(failure.getMessage(), failure);
        }
        if (!session.attach()) {
            wakeUp.sleep(10);
            return records.build();
        }
        SlotRing ring = session.ring();
        ring.heartbeat();
        if (!session.alive()) {
            return records.build(); // follows the group's new subscription on the next fetch
        }
        if (wakeUp.consume()) {
            return records.build();
        }
        ring.await(AWAIT_MS * 1_000_000L);
        // Read before looking at the ring: a push pass that began after this heartbeat has
        // published whatever it had read (see PushPending#failIfPositionsWereRemoved).
        long heartbeat = session.region().brokerHeartbeatNanos();
        long position = ring.tryNext();
        if (position >= 0) {
            return readSlot(ring, position);
        }
        pending.failIfPositionsWereRemoved(splits.values(), heartbeat);
        return records.build();
    }

    /**
     * Decides which rows of the slot each split emits (one step per chunk) and hands the slot to
     * Flink in a {@link PushSlotRecords}; a slot with nothing to emit is released at once.
     */
    private RecordsWithSplitIds<RecordRun> readSlot(SlotRing ring, long position)
            throws IOException {
        int flags = ring.flags(position);
        if (flags != 0) {
            return readMarker(ring, position, flags);
        }
        long bytes = 0;
        boolean splitsFinished = false;
        PushSlotRecords.Builder batch = new PushSlotRecords.Builder();
        ArrowSlotView view = views.take();
        boolean handedOver = false;
        try {
            view.load(ring, position);
            int rows = view.rowCount();
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
                advance(s, new Position(at.group(), at.segment(), at.offset() + chunkBytes));
                if (s.finished()) {
                    finish(s, batch::addFinishedSplit);
                    splitsFinished = true;
                }
            }
            slotsConsumed++;
            bytesConsumed += bytes;
            metrics.fetchCompleted(bytes, batch.records());
            if (batch.hasRecords()) {
                PushSlotRecords built = batch.build(view, position, views);
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
    private RecordsWithSplitIds<RecordRun> readMarker(SlotRing ring, long position, int flags)
            throws IOException {
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
                advance(
                        s,
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
                advance(s, end);
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
                pending.add(s);
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
            join();
        } else {
            member.splitsChanged();
        }
    }

    /**
     * Joins the host's group with the first splits, in this JVM or, when the enumerator said
     * another JVM of the host holds the subscription, through the enumerator; from then on the
     * membership's scheduler heartbeats the ring (the fetcher thread blocks while Flink's element
     * queue is full, and the broker must not reclaim the ring meanwhile) and refreshes the pending
     * metrics.
     *
     * @return false while the reader waits for the enumerator's word (it restored splits)
     */
    private boolean join() {
        switch (election.decide()) {
            case WAIT:
                return false;
            case RELAYED:
                RelayedMembership relayed =
                        new RelayedMembership(
                                stream,
                                election.broker(),
                                subtaskIndex,
                                election.relayTo(),
                                election.toEnumerator(),
                                this::currentPositions,
                                RELAYED_ANSWER_TIMEOUT_MS);
                election.relayed(relayed);
                relayed.join();
                LOG.info(
                        "Subtask {} asks subtask {}'s TaskManager for its push ring",
                        subtaskIndex,
                        relayed.leader());
                member = relayed;
                break;
            default:
                joinedWith = groupConnection.get();
                member =
                        registry.join(
                                key, subtaskIndex, joinedWith, geometry, this::currentPositions);
        }
        RingSession s = new RingSession(member, subtaskIndex, staleAfterNanos, metrics);
        session = s;
        scheduled.add(member.schedule(s::heartbeat, heartbeatPeriodMs, heartbeatPeriodMs));
        if (pendingRefreshMs > 0) {
            scheduled.add(member.schedule(pending::refresh, 0, pendingRefreshMs));
        }
        return true;
    }

    /** Moves a split on; a paused split's position is not offered to a re-subscribe. */
    private void advance(PushCursor s, Position next) {
        s.advance(next);
        if (!s.paused) {
            positions.put(s.streamlet, new PushSplitStart(s.streamlet, next));
        }
    }

    /** Forgets a split that finished or was taken away. */
    private void remove(PushCursor s) {
        splits.remove(s.streamlet);
        positions.remove(s.streamlet);
        pending.remove(s);
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

    @Override
    public void close() throws Exception {
        boolean closeGroupConnection = true;
        try {
            if (member != null) {
                // The group may keep our connection: it carries the subscription of the others.
                closeGroupConnection = member.leave();
            }
        } finally {
            scheduled.forEach(f -> f.cancel(false));
            if (session != null) {
                if (member instanceof RelayedMembership) {
                    // The group holding our ring in another JVM learns of it through the ring
                    // (our "left" event may not reach it when the job is being cancelled).
                    session.abandon();
                }
                session.detach();
            }
            views.close(); // outstanding batches keep their view (and mapping) until recycled
            if (joinedWith != null && joinedWith != client && closeGroupConnection) {
                joinedWith.close();
            }
            if (joinedWith != client || closeGroupConnection) {
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
}
