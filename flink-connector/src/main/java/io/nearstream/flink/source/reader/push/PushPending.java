package io.nearstream.flink.source.reader.push;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.Position;
import io.nearstream.client.StatusCode;
import io.nearstream.client.StreamletMetadata;
import io.nearstream.flink.source.BrokerErrors;
import io.nearstream.flink.source.NearstreamSourceOptions;
import io.nearstream.flink.source.metrics.NearstreamSourceReaderMetrics;
import io.nearstream.flink.source.reader.push.PushCursor.BeyondHead;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.flink.annotation.Internal;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code pendingBytes}/{@code pendingRecords} in push mode, and the retention loss they reveal.
 * Slots carry no tail, so the streamlets' tails are refreshed with an asynchronous Metadata RPC
 * every {@link NearstreamSourceOptions#PUSH_PENDING_REFRESH_INTERVAL} (from the group's scheduler,
 * never the fetcher thread) and compared with the splits' positions, as pull mode does with the
 * tails its fetch responses carry. The same answers show a split whose position retention removed
 * before it was pushed ({@link #failIfPositionsWereRemoved}).
 */
@Internal
final class PushPending {

    private static final Logger LOG = LoggerFactory.getLogger(PushPending.class);

    private final NearstreamClient client;
    private final String stream;
    private final NearstreamSourceReaderMetrics metrics;

    /** Splits by streamlet (any thread). */
    private final Map<Integer, PushCursor> splits = new ConcurrentHashMap<>();

    private final AtomicBoolean tailsRequested = new AtomicBoolean();
    private volatile boolean segmentSizeKnown;

    PushPending(NearstreamClient client, String stream, NearstreamSourceReaderMetrics metrics) {
        this.client = client;
        this.stream = stream;
        this.metrics = metrics;
    }

    void add(PushCursor s) {
        splits.put(s.streamlet, s);
    }

    /** Forgets a split that finished or was taken away, and its gauge. */
    void remove(PushCursor s) {
        splits.remove(s.streamlet);
        synchronized (s) {
            s.removed = true;
            metrics.removeSplit(s.splitId);
        }
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
    void failIfPositionsWereRemoved(Collection<PushCursor> current, long heartbeatBeforeLooking) {
        for (PushCursor s : current) {
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
     * Asks the streamlets' tails without waiting and, when they come, updates the pending metrics
     * from each split's position at that moment. One request at a time. The client times its
     * requests out itself; no {@code CompletableFuture.orTimeout} here, whose JDK-wide delay thread
     * would keep the class loader of the job that started it for the JVM's lifetime.
     */
    void refresh() {
        if (splits.isEmpty() || !tailsRequested.compareAndSet(false, true)) {
            return;
        }
        try {
            if (!segmentSizeKnown) {
                client.describeStream(stream)
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
                    .whenComplete(
                            (streamlets, error) -> {
                                try {
                                    if (streamlets != null) {
                                        update(streamlets, askedAt);
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

    private void update(List<StreamletMetadata> streamlets, long askedAt) {
        for (StreamletMetadata m : streamlets) {
            PushCursor s = splits.get(m.streamlet());
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
}
