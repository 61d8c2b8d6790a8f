package io.nearstream.flink.source.reader;

import io.nearstream.client.ChunkBlock;
import io.nearstream.client.ChunkCursor;
import io.nearstream.client.FetchEntry;
import io.nearstream.client.FetchResponse;
import io.nearstream.client.FollowerReads;
import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NearstreamClientException;
import io.nearstream.client.Position;
import io.nearstream.client.RecordFilter;
import io.nearstream.client.StatusCode;
import io.nearstream.client.StreamletFetch;
import io.nearstream.flink.source.BrokerErrors;
import io.nearstream.flink.source.NearstreamSourceOptions;
import io.nearstream.flink.source.metrics.NearstreamSourceReaderMetrics;
import io.nearstream.flink.source.split.NearstreamSplit;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntUnaryOperator;
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
 * The pull-mode split reader: one broker connection, and per {@link #fetch()} one Fetch RPC over
 * all assigned, not paused streamlets (a byte budget per streamlet, a long-poll wait when none has
 * new data).
 *
 * <p>Each record is copied out of the response into its own {@code byte[]} (the element must
 * outlive the response, which is closed before {@code fetch()} returns). Per split it tracks the
 * next chunk position, the records still to skip in the first chunk after a restore, and the
 * stopping position of a bounded split, at which the split finishes.
 *
 * <p>{@link #wakeUp()} makes a waiting {@code fetch()} return at once (the abandoned response is
 * closed when it arrives). Retriable failures (transport, {@code SHUTTING_DOWN}, {@code
 * STORAGE_ERROR}) are retried with back-off up to {@code fetch.retries} times in a row, then
 * surface as an {@link IOException}; fatal ones as a {@link
 * io.nearstream.flink.source.NearstreamException} (see {@link BrokerErrors}).
 *
 * <p>With follower reads on (over a cluster), each streamlet is fetched from its serving broker for
 * the reader's host ({@link io.nearstream.flink.source.enumerator.StreamLocality#servingBroker}):
 * its leader, or an in-sync replica on this host, asked with the replica-read flag. A streamlet
 * that follower does not serve goes to its leader in the same fetch and stays there for a while
 * ({@link FollowerReads}); positions are the leader's on both, so nothing is lost or read twice.
 * With follower reads off, every streamlet is fetched from its leader, as before.
 *
 * <p>Runs on the split fetcher thread; only {@link #wakeUp()} is called from other threads.
 */
@Internal
public class PullSplitReader implements SplitReader<RecordRun, NearstreamSplit> {

    private static final Logger LOG = LoggerFactory.getLogger(PullSplitReader.class);

    private final NearstreamClient client;
    private final String stream;
    private final NearstreamSourceReaderMetrics metrics;
    private final int maxBytesPerStreamlet;
    private final int maxBytesPerFetch;
    private final int maxWaitMs;
    private final long requestTimeoutMs;
    private final int maxRetries;
    private final long retryBackoffMs;

    /** Assigned splits by streamlet, in assignment order. */
    private final Map<Integer, PullCursor> streamlets = new LinkedHashMap<>();

    private final ChunkCursor cursor = new ChunkCursor();
    private final RecordFilter filter; // records that fail it are not emitted
    private final DamagedData damagedData;
    private final WakeUpSignal wakeUp = new WakeUpSignal();

    /** The broker each streamlet is read from for this reader's host; null: from its leader. */
    @Nullable private final IntUnaryOperator servingBroker;

    /** Where {@link #servingBroker} sends the assigned streamlets; null with follower reads off. */
    @Nullable private final FollowerReads followerReads;

    private int consecutiveFailures;
    private boolean segmentSizeRequested;

    /** A reader that fetches every streamlet from its leader. */
    public PullSplitReader(
            NearstreamClient client,
            String stream,
            Configuration config,
            NearstreamSourceReaderMetrics metrics) {
        this(client, stream, config, metrics, null);
    }

    /**
     * @param servingBroker with follower reads on, the broker each streamlet is read from (its
     *     leader or an in-sync follower; -1 for a streamlet it does not know, read from its
     *     leader); null reads every streamlet from its leader
     */
    public PullSplitReader(
            NearstreamClient client,
            String stream,
            Configuration config,
            NearstreamSourceReaderMetrics metrics,
            @Nullable IntUnaryOperator servingBroker) {
        this.servingBroker = servingBroker;
        this.followerReads = servingBroker == null ? null : new FollowerReads();
        this.client = client;
        this.stream = stream;
        this.metrics = metrics;
        this.maxBytesPerStreamlet =
                config.get(NearstreamSourceOptions.FETCH_MAX_BYTES_PER_STREAMLET);
        this.maxBytesPerFetch = config.get(NearstreamSourceOptions.FETCH_MAX_BYTES);
        this.maxWaitMs = (int) config.get(NearstreamSourceOptions.FETCH_MAX_WAIT).toMillis();
        this.requestTimeoutMs = config.get(NearstreamSourceOptions.REQUEST_TIMEOUT).toMillis();
        this.maxRetries = config.get(NearstreamSourceOptions.FETCH_RETRIES);
        this.retryBackoffMs = config.get(NearstreamSourceOptions.FETCH_RETRY_BACKOFF).toMillis();
        this.damagedData = new DamagedData(stream, config, metrics);
        this.filter = RecordFilter.parseSpec(config.get(NearstreamSourceOptions.RECORD_FILTER));
    }

    @Override
    public RecordsWithSplitIds<RecordRun> fetch() throws IOException {
        RecordsBySplits.Builder<RecordRun> records = new RecordsBySplits.Builder<>();
        boolean finishedAny = finishSplitsAtTheirStop(records);

        List<FetchEntry> entries = new ArrayList<>(streamlets.size());
        for (PullCursor s : streamlets.values()) {
            if (!s.paused) {
                entries.add(new FetchEntry(s.streamlet, s.position, 0));
            }
        }
        if (entries.isEmpty()) {
            // Everything paused (watermark alignment) or finished: wait for a change, not spin.
            if (!finishedAny) {
                wakeUp.sleep(maxWaitMs);
            }
            return records.build();
        }
        int perStreamlet =
                Math.max(1, Math.min(maxBytesPerStreamlet, maxBytesPerFetch / entries.size()));
        for (int i = 0; i < entries.size(); i++) {
            FetchEntry e = entries.get(i);
            entries.set(i, new FetchEntry(e.streamlet(), e.position(), perStreamlet));
        }

        FetchResponse response;
        try {
            response =
                    awaitUnlessWokenUp(
                            followerReads == null
                                    ? client.fetch(stream, maxWaitMs, entries)
                                    : client.fetch(stream, maxWaitMs, entries, followerReads));
        } catch (Exception e) {
            handleFailure("Fetch from stream '" + stream + "'", e);
            return records.build();
        }
        if (response == null) {
            return records.build(); // woken up
        }
        try {
            readResponse(response, records);
        } finally {
            response.close();
        }
        return records.build();
    }

    private void readResponse(FetchResponse response, RecordsBySplits.Builder<RecordRun> records)
            throws IOException {
        long bytes = 0;
        long lastChunkTimestamp = Long.MIN_VALUE;
        long count = 0;
        IOException entryFailure = null;
        for (StreamletFetch result : response.results()) {
            PullCursor s = streamlets.get(result.streamlet());
            if (s == null) {
                continue; // removed meanwhile; cannot happen on the fetcher thread, but be safe
            }
            if (result.status() == StatusCode.DATA_LOSS) {
                // Throws unless skipping; the broker's `next` is the end of the damaged range.
                s.position =
                        damagedData.reached(
                                s.streamlet, s.position, result.next(), result.message());
                if (s.finished()) {
                    finish(s, records);
                }
                continue;
            }
            if (!result.ok()) {
                // A fatal status throws here; a retriable one is retried after the batch.
                IOException e =
                        BrokerErrors.failure(
                                "Fetch of streamlet "
                                        + s.streamlet
                                        + " of stream '"
                                        + stream
                                        + "' at "
                                        + s.position,
                                result.status(),
                                result.message());
                if (entryFailure == null) {
                    entryFailure = e;
                }
                continue;
            }
            boolean reachedStop = false;
            List<RecordRun> out = new ArrayList<>();
            try {
                blocks:
                for (ChunkBlock block : result.blocks()) {
                    cursor.reset(block);
                    while (cursor.nextChunk()) {
                        Position at = cursor.position();
                        if (s.stopsAt(at)) {
                            reachedStop = true;
                            break blocks;
                        }
                        int size = cursor.header().totalSize();
                        long timestamp = cursor.header().firstTimestampMs();
                        RecordRun run =
                                RecordRun.copyChunk(
                                        cursor, s.streamlet, s.takeRecordsToSkip(at), filter);
                        if (run != null) {
                            out.add(run);
                            count += run.size();
                        }
                        bytes += size;
                        lastChunkTimestamp = timestamp;
                        s.position = new Position(at.group(), at.segment(), at.offset() + size);
                    }
                }
            } catch (NearstreamClientException e) {
                // A chunk that fails its CRC or framing: the same bytes fail the same way.
                throw BrokerErrors.fatal(
                        "Reading the chunks of streamlet "
                                + s.streamlet
                                + " of stream '"
                                + stream
                                + "' after "
                                + s.position,
                        e);
            }
            if (!out.isEmpty()) {
                records.addAll(s.splitId, out);
            }
            if (!reachedStop) {
                s.position = result.next();
                reachedStop = s.finished();
            }
            metrics.updatePending(s.splitId, s.position, result.tail());
            if (reachedStop) {
                finish(s, records);
            }
        }
        metrics.fetchCompleted(bytes, count);
        if (lastChunkTimestamp != Long.MIN_VALUE) {
            metrics.updateFetchEventTimeLag(System.currentTimeMillis() - lastChunkTimestamp);
        }
        if (entryFailure != null) {
            handleFailure("Fetch from stream '" + stream + "'", entryFailure);
        } else {
            consecutiveFailures = 0;
        }
    }

    /** Splits whose position is at or beyond their stopping position finish without a fetch. */
    private boolean finishSplitsAtTheirStop(RecordsBySplits.Builder<RecordRun> records) {
        boolean finishedAny = false;
        Iterator<PullCursor> it = streamlets.values().iterator();
        while (it.hasNext()) {
            PullCursor s = it.next();
            if (s.finished()) {
                it.remove();
                metrics.removeSplit(s.splitId);
                records.addFinishedSplit(s.splitId);
                finishedAny = true;
                LOG.info("Split {} reached its stopping position {}", s.splitId, s.stop);
            }
        }
        return finishedAny;
    }

    private void finish(PullCursor s, RecordsBySplits.Builder<RecordRun> records) {
        streamlets.remove(s.streamlet);
        metrics.removeSplit(s.splitId);
        records.addFinishedSplit(s.splitId);
        LOG.info("Split {} reached its stopping position {}", s.splitId, s.stop);
    }

    /**
     * A retriable failure is absorbed (after a back-off) until it happened more than {@code
     * fetch.retries} times in a row; then it fails the fetch. Fatal failures fail at once.
     */
    private void handleFailure(String what, Exception e) throws IOException {
        metrics.fetchFailed();
        // A fatal failure throws here.
        IOException classified =
                e instanceof IOException ? (IOException) e : BrokerErrors.failure(what, e);
        consecutiveFailures++;
        if (consecutiveFailures > maxRetries) {
            throw new IOException(
                    what + " failed " + consecutiveFailures + " times in a row", classified);
        }
        long backoff = retryBackoffMs << Math.min(consecutiveFailures - 1, 10);
        LOG.warn(
                "{} failed (attempt {} of {}), retrying in {} ms",
                what,
                consecutiveFailures,
                maxRetries + 1,
                backoff,
                classified);
        wakeUp.sleep(backoff);
    }

    /**
     * Waits for {@code future} unless {@link #wakeUp()} is called first; returns null then (the
     * response, when it comes, is closed unread).
     */
    @Nullable
    private FetchResponse awaitUnlessWokenUp(CompletableFuture<FetchResponse> future)
            throws Exception {
        CompletableFuture<Void> w = wakeUp.arm();
        try {
            CompletableFuture.anyOf(future, w)
                    .get(maxWaitMs + requestTimeoutMs, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (TimeoutException e) {
            abandon(future);
            throw new IOException(
                    "no Fetch response from "
                            + client.address()
                            + " within "
                            + (maxWaitMs + requestTimeoutMs)
                            + " ms",
                    e);
        } catch (ExecutionException e) {
            if (future.isCompletedExceptionally()) {
                throw e;
            }
        } finally {
            wakeUp.disarm();
        }
        if (!future.isDone()) {
            wakeUp.consume(); // a wake-up that raced the response is spent
            abandon(future);
            return null;
        }
        return future.get();
    }

    private static void abandon(CompletableFuture<FetchResponse> future) {
        future.whenComplete(
                (response, error) -> {
                    if (response != null) {
                        response.close();
                    }
                });
    }

    @Override
    public void handleSplitsChanges(SplitsChange<NearstreamSplit> splitsChanges) {
        if (splitsChanges instanceof SplitsAddition) {
            for (NearstreamSplit split : splitsChanges.splits()) {
                checkStream(split);
                streamlets.put(split.streamlet(), new PullCursor(split));
                chooseBroker(split.streamlet());
                LOG.info("Reading split {}", split);
            }
            requestSegmentSize();
        } else if (splitsChanges instanceof SplitsRemoval) {
            for (NearstreamSplit split : splitsChanges.splits()) {
                PullCursor removed = streamlets.remove(split.streamlet());
                if (removed != null) {
                    metrics.removeSplit(removed.splitId);
                }
                if (followerReads != null) {
                    followerReads.readFromLeader(split.streamlet());
                }
            }
        } else {
            throw new UnsupportedOperationException(
                    "Unsupported splits change " + splitsChanges.getClass().getName());
        }
    }

    /** With follower reads on, reads {@code streamlet} from its serving broker for this host. */
    private void chooseBroker(int streamlet) {
        if (followerReads == null) {
            return;
        }
        int broker = servingBroker.applyAsInt(streamlet);
        if (broker < 0) {
            followerReads.readFromLeader(streamlet);
        } else {
            followerReads.readFrom(streamlet, broker);
            LOG.info(
                    "Streamlet {} of stream '{}' is fetched from broker {}, its serving broker"
                            + " for this host (from its leader while that broker does not serve"
                            + " it)",
                    streamlet,
                    stream,
                    Integer.toUnsignedString(broker));
        }
    }

    private void checkStream(NearstreamSplit split) {
        if (!split.stream().equals(stream)) {
            throw new IllegalArgumentException(
                    "split "
                            + split
                            + " belongs to stream '"
                            + split.stream()
                            + "', this reader reads '"
                            + stream
                            + "'");
        }
    }

    /** The segment size turns pending positions into bytes; asked once, without waiting. */
    private void requestSegmentSize() {
        if (segmentSizeRequested) {
            return;
        }
        segmentSizeRequested = true;
        client.describeStream(stream)
                .whenComplete(
                        (config, error) -> {
                            if (config != null) {
                                metrics.setSegmentBytes(
                                        Integer.toUnsignedLong(config.segmentBytes()));
                            }
                        });
    }

    @Override
    public void pauseOrResumeSplits(
            Collection<NearstreamSplit> splitsToPause, Collection<NearstreamSplit> splitsToResume) {
        for (NearstreamSplit split : splitsToPause) {
            PullCursor s = streamlets.get(split.streamlet());
            if (s != null) {
                s.paused = true;
            }
        }
        for (NearstreamSplit split : splitsToResume) {
            PullCursor s = streamlets.get(split.streamlet());
            if (s != null) {
                s.paused = false;
            }
        }
    }

    @Override
    public void wakeUp() {
        wakeUp.wakeUp();
    }

    @Override
    public void close() {
        client.close();
    }

    /** Where each assigned split continues (for tests). */
    @VisibleForTesting
    Map<String, Position> positions() {
        Map<String, Position> out = new HashMap<>();
        streamlets.values().forEach(s -> out.put(s.splitId, s.position));
        return out;
    }

    /** Pull-specific state of a split: paused for watermark alignment. */
    private static final class PullCursor extends SplitCursor {
        boolean paused;

        PullCursor(NearstreamSplit split) {
            super(split);
        }
    }
}
