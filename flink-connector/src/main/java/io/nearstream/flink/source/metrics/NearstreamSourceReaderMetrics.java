package io.nearstream.flink.source.metrics;

import io.nearstream.client.Position;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.annotation.Internal;
import org.apache.flink.annotation.VisibleForTesting;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.groups.SourceReaderMetricGroup;
import org.apache.flink.runtime.metrics.DescriptiveStatisticsHistogram;

/**
 * The metrics of one Nearstream source reader.
 *
 * <p>FLIP-33 standard metrics on the reader's group: {@code numRecordsIn} (counted by Flink),
 * {@code numBytesIn} (chunk bytes fetched, headers included), {@code pendingBytes} and {@code
 * pendingRecords}, {@code currentFetchEventTimeLag} (the time of the latest fetch minus the
 * timestamp of the newest chunk it returned; -1 before any data). Nearstream-specific ones under
 * the {@code nearstream} group: {@code fetchRequests}, {@code fetchErrors}, {@code emptyFetches}
 * (counters), {@code bytesPerFetch} (histogram over the last 1024 fetches), {@code
 * numDamagedRangesSkipped} and {@code damagedBytesSkipped} (counters of damaged ranges stepped over
 * with {@code nearstream.source.skip-damaged-data}) and {@code pushChunksFetched} (chunks too large
 * for a push slot, read by fetch).
 *
 * <p>Pending data is an estimate: Nearstream has no record offsets, so the distance from a reader's
 * position to the streamlet's tail is computed in bytes from positions (segment ids grow
 * streamlet-wide, segments have the stream's segment size) and turned into records with the average
 * fetched bytes per record. It is exact inside one segment and ignores the unused end of full
 * segments otherwise. Pull mode takes each streamlet's tail from its fetch responses; push mode,
 * whose slots carry no tail, from a periodic asynchronous Metadata request, fed through the same
 * {@link #updatePending}, so the gauges mean the same in both modes.
 */
@Internal
public final class NearstreamSourceReaderMetrics {

    public static final String NEARSTREAM_GROUP = "nearstream";
    public static final String FETCH_REQUESTS = "fetchRequests";
    public static final String FETCH_ERRORS = "fetchErrors";
    public static final String EMPTY_FETCHES = "emptyFetches";
    public static final String BYTES_PER_FETCH = "bytesPerFetch";
    public static final String CURRENT_FETCH_EVENT_TIME_LAG = "currentFetchEventTimeLag";
    public static final String PUSH_SLOTS_CONSUMED = "pushSlotsConsumed";
    public static final String PUSH_BYTES_CONSUMED = "pushBytesConsumed";
    public static final String PUSH_SPIN_WAKEUPS = "pushSpinWakeups";
    public static final String PUSH_FUTEX_SLEEPS = "pushFutexSleeps";
    public static final String PUSH_WAIT_TIME_MS = "pushWaitTimeMs";
    public static final String DAMAGED_RANGES_SKIPPED = "numDamagedRangesSkipped";
    public static final String DAMAGED_BYTES_SKIPPED = "damagedBytesSkipped";
    public static final String PUSH_CHUNKS_FETCHED = "pushChunksFetched";

    /** Used until the stream's real segment size is known (the broker's default). */
    private static final long DEFAULT_SEGMENT_BYTES = 8L * 1024 * 1024;

    private final Counter numBytesIn;
    private final Counter fetchRequests;
    private final Counter fetchErrors;
    private final Counter emptyFetches;
    private final Counter damagedRangesSkipped;
    private final Counter damagedBytesSkipped;
    private final Counter pushChunksFetched;
    private final Histogram bytesPerFetch;
    private final MetricGroup nearstreamGroup;

    /** Pending bytes per split, written by the fetcher thread. */
    private final Map<String, Long> pendingBytesBySplit = new ConcurrentHashMap<>();

    private volatile long segmentBytes = DEFAULT_SEGMENT_BYTES;
    private volatile long fetchedBytes;
    private volatile long fetchedRecords;
    private volatile long currentFetchEventTimeLag = -1;

    public NearstreamSourceReaderMetrics(SourceReaderMetricGroup readerGroup) {
        this.numBytesIn = readerGroup.getIOMetricGroup().getNumBytesInCounter();
        readerGroup.setPendingBytesGauge(this::pendingBytes);
        readerGroup.setPendingRecordsGauge(this::pendingRecords);
        readerGroup.gauge(CURRENT_FETCH_EVENT_TIME_LAG, () -> currentFetchEventTimeLag);

        MetricGroup group = readerGroup.addGroup(NEARSTREAM_GROUP);
        this.nearstreamGroup = group;
        this.fetchRequests = group.counter(FETCH_REQUESTS);
        this.fetchErrors = group.counter(FETCH_ERRORS);
        this.emptyFetches = group.counter(EMPTY_FETCHES);
        this.damagedRangesSkipped = group.counter(DAMAGED_RANGES_SKIPPED);
        this.damagedBytesSkipped = group.counter(DAMAGED_BYTES_SKIPPED);
        this.pushChunksFetched = group.counter(PUSH_CHUNKS_FETCHED);
        this.bytesPerFetch =
                group.histogram(BYTES_PER_FETCH, new DescriptiveStatisticsHistogram(1024));
    }

    /** The stream's segment size, once the reader learnt it. */
    public void setSegmentBytes(long bytes) {
        if (bytes > 0) {
            this.segmentBytes = bytes;
        }
    }

    /** One fetch RPC answered with {@code bytes} chunk bytes holding {@code records} records. */
    public void fetchCompleted(long bytes, long records) {
        fetchRequests.inc();
        bytesPerFetch.update(bytes);
        if (bytes == 0) {
            emptyFetches.inc();
            return;
        }
        numBytesIn.inc(bytes);
        // Single writer (the fetcher thread); volatile only for the gauges' readers.
        fetchedBytes += bytes;
        fetchedRecords += records;
    }

    /**
     * Push mode: slots consumed, chunk bytes read from them, waits that ended while spinning, futex
     * sleeps and the time spent waiting for a slot (ms), under the {@value #NEARSTREAM_GROUP}
     * group.
     */
    public void registerPushGauges(
            Gauge<Long> slots,
            Gauge<Long> bytes,
            Gauge<Long> spinWakeups,
            Gauge<Long> futexSleeps,
            Gauge<Long> waitMs) {
        nearstreamGroup.gauge(PUSH_SLOTS_CONSUMED, slots);
        nearstreamGroup.gauge(PUSH_BYTES_CONSUMED, bytes);
        nearstreamGroup.gauge(PUSH_SPIN_WAKEUPS, spinWakeups);
        nearstreamGroup.gauge(PUSH_FUTEX_SLEEPS, futexSleeps);
        nearstreamGroup.gauge(PUSH_WAIT_TIME_MS, waitMs);
    }

    public void fetchFailed() {
        fetchErrors.inc();
    }

    /** A damaged range of {@code bytes} was stepped over (skip-damaged-data). */
    public void damagedRangeSkipped(long bytes) {
        damagedRangesSkipped.inc();
        damagedBytesSkipped.inc(bytes);
    }

    /** A chunk too large for a push slot was read by fetch. */
    public void pushChunkFetched() {
        pushChunksFetched.inc();
    }

    /**
     * After a fetch (pull) or a tail refresh (push): the split continues at {@code next}; its
     * streamlet ends at {@code tail}. Any thread.
     */
    public void updatePending(String splitId, Position next, Position tail) {
        pendingBytesBySplit.put(splitId, distance(next, tail, segmentBytes));
    }

    public void removeSplit(String splitId) {
        pendingBytesBySplit.remove(splitId);
    }

    /** After a fetch: its time minus the timestamp of the newest chunk it returned. */
    public void updateFetchEventTimeLag(long lagMs) {
        currentFetchEventTimeLag = lagMs;
    }

    @VisibleForTesting
    public long pendingBytes() {
        long sum = 0;
        for (long b : pendingBytesBySplit.values()) {
            sum += b;
        }
        return sum;
    }

    @VisibleForTesting
    public long pendingRecords() {
        long records = fetchedRecords;
        long bytes = fetchedBytes;
        if (records == 0) {
            return 0;
        }
        return (long) (pendingBytes() / ((double) bytes / records));
    }

    @VisibleForTesting
    public long currentFetchEventTimeLag() {
        return currentFetchEventTimeLag;
    }

    @VisibleForTesting
    public long numBytesIn() {
        return numBytesIn.getCount();
    }

    @VisibleForTesting
    public long fetchRequests() {
        return fetchRequests.getCount();
    }

    /** Estimated chunk bytes between two positions of one streamlet (0 when at or past tail). */
    @VisibleForTesting
    public static long distance(Position from, Position tail, long segmentBytes) {
        if (from.isEarliest() || tail.isEarliest() || from.compareTo(tail) >= 0) {
            // Before the first fetch we do not know where the head is; report nothing rather
            // than a guess.
            return 0;
        }
        if (from.segment() == tail.segment()) {
            return Integer.toUnsignedLong(tail.offset()) - Integer.toUnsignedLong(from.offset());
        }
        long segmentsBetween = tail.segment() - from.segment() - 1;
        long rest = Math.max(0, segmentBytes - Integer.toUnsignedLong(from.offset()));
        return rest
                + Math.max(0, segmentsBetween) * segmentBytes
                + Integer.toUnsignedLong(tail.offset());
    }
}
