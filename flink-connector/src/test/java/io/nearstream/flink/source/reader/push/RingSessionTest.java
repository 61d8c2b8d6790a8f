package io.nearstream.flink.source.reader.push;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.flink.source.metrics.NearstreamSourceReaderMetrics;
import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry.Attachment;
import io.nearstream.flink.source.testutils.PushTestRegion;
import java.nio.file.Path;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A push reader's hold on its ring, against a region file written as the broker would. */
class RingSessionTest {

    private static final long EPOCH = 7;

    /** A membership whose group gave it ring 0 of {@code path}; nothing is scheduled. */
    private static PushMembership member(Path path) {
        Attachment attachment = new Attachment(1, 1, EPOCH, path.toString(), 0);
        return new PushMembership() {
            @Override
            public Attachment attachment() {
                return attachment;
            }

            @Override
            @Nullable
            public Exception failure() {
                return null;
            }

            @Override
            public ScheduledFuture<?> schedule(Runnable task, long initialDelayMs, long periodMs) {
                // These tests call heartbeat() themselves; a session that scheduled one would
                // be testing the clock, not the ring.
                throw new UnsupportedOperationException("RingSessionTest schedules nothing");
            }

            @Override
            public void splitsChanged() {}

            @Override
            public boolean leave() {
                return true;
            }
        };
    }

    /**
     * A heartbeat already scheduled when the reader closes may run between abandon() and detach():
     * it must leave the abandon's 0 in place, or whoever watches the ring (the broker, the group
     * holding it in another JVM) takes it for read for another consumer timeout.
     */
    @Test
    void aHeartbeatAfterAbandonLeavesTheRingAbandoned(@TempDir Path dir) throws Exception {
        Path path = dir.resolve("region");
        PushTestRegion broker = PushTestRegion.create(path, EPOCH, 8, 64 * 1024, 0);
        RingSession session =
                new RingSession(
                        member(path),
                        0,
                        TimeUnit.SECONDS.toNanos(10),
                        new NearstreamSourceReaderMetrics(
                                UnregisteredMetricsGroup.createSourceReaderMetricGroup()));
        assertThat(session.attach()).isTrue();

        long activated = broker.consumerHeartbeat(0);
        Thread.sleep(2); // System.nanoTime() moves on
        session.heartbeat();
        assertThat(broker.consumerHeartbeat(0))
                .as("heartbeat while reading")
                .isGreaterThan(activated);

        session.abandon();
        assertThat(broker.consumerHeartbeat(0)).as("abandoned").isZero();
        session.heartbeat(); // the scheduler's, racing the reader's close
        assertThat(broker.consumerHeartbeat(0))
                .as("still abandoned after a late heartbeat")
                .isZero();

        session.detach();
        session.heartbeat();
        assertThat(broker.consumerHeartbeat(0)).isZero();
    }
}
