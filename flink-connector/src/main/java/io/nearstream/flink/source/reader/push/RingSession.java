package io.nearstream.flink.source.reader.push;

import io.nearstream.flink.source.metrics.NearstreamSourceReaderMetrics;
import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry.Attachment;
import io.nearstream.jni.ShmLayout;
import io.nearstream.jni.ShmRegion;
import io.nearstream.jni.SlotRing;
import java.io.IOException;
import java.nio.file.Path;
import java.util.function.ToLongFunction;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A push reader's hold on its ring: attaches to the ring that its group's current subscription
 * gives it (mapping the region), checks that the broker is alive and still lets it read there,
 * heartbeats the ring and detaches. Driven by the fetcher thread; {@link #heartbeat()} also runs on
 * the group's scheduler, because the fetcher thread blocks while Flink's element queue is full
 * (backpressure) and the broker must not reclaim the ring meanwhile.
 *
 * <p>Failures: a closed region, a changed broker epoch, a broker heartbeat older than the consumer
 * timeout, or a ring taken back by the broker fail with an {@link IOException} (Flink restores from
 * its checkpoint) - unless the group moved to a new subscription meanwhile, which the session then
 * follows.
 */
@Internal
final class RingSession {

    private static final Logger LOG = LoggerFactory.getLogger(RingSession.class);

    private final PushMembership member;
    private final int subtaskIndex;
    private final long staleAfterNanos;
    private final NearstreamSourceReaderMetrics metrics;

    @Nullable private Attachment attached;
    @Nullable private ShmRegion region;
    private long waitingForRingSince;

    /**
     * The attached ring. Written by the fetcher thread under {@link #lock}, which the heartbeat
     * holds while it writes into the ring, so the region is never unmapped under it.
     */
    @Nullable private volatile SlotRing ring;

    private final Object lock = new Object();

    /**
     * Guarded by {@link #lock}: set by {@link #abandon()}, after which {@link #heartbeat()} writes
     * nothing. A heartbeat already scheduled on the membership's scheduler may take the lock after
     * abandon() and before detach(); it must not overwrite the abandon's 0 with a fresh heartbeat,
     * or the broker and a group holding the ring in another JVM take the ring for read for another
     * consumer timeout (and keep its region that long).
     */
    private boolean abandoned;

    RingSession(
            PushMembership member,
            int subtaskIndex,
            long staleAfterNanos,
            NearstreamSourceReaderMetrics metrics) {
        this.member = member;
        this.subtaskIndex = subtaskIndex;
        this.staleAfterNanos = staleAfterNanos;
        this.metrics = metrics;
    }

    /** The attached ring; only valid after {@link #attach()} returned true (fetcher thread). */
    SlotRing ring() {
        return ring;
    }

    /** The attached ring's region; only valid after {@link #attach()} returned true. */
    ShmRegion region() {
        return region;
    }

    /** A statistic of the attached ring (counted since it was attached), 0 when none is. */
    long stat(ToLongFunction<SlotRing> stat) {
        SlotRing r = ring;
        return r != null ? stat.applyAsLong(r) : 0;
    }

    /** Any thread; does nothing once the session was {@linkplain #abandon() abandoned}. */
    void heartbeat() {
        synchronized (lock) {
            SlotRing r = ring;
            if (r != null && !abandoned) {
                r.heartbeat();
            }
        }
    }

    /** Attaches to the ring of the group's current subscription; false while there is none yet. */
    boolean attach() throws IOException {
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
        synchronized (lock) {
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
    boolean alive() throws IOException {
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
     * The reader stops for good: marks the ring's consumer dead at once (docs/shm-layout.md,
     * "Liveness"), so whoever watches it - the broker, and a push group in another JVM holding the
     * subscription for this reader - need not wait for the heartbeat to go stale.
     */
    void abandon() {
        synchronized (lock) {
            abandoned = true; // for good: no later heartbeat() revives the ring
            SlotRing r = ring;
            if (r != null) {
                r.abandon();
            }
        }
    }

    /** Stops reading the ring; batches of its slots still held release them when recycled. */
    void detach() {
        attached = null;
        synchronized (lock) {
            ring = null;
            if (region != null) {
                region.close();
                region = null;
            }
        }
    }
}
