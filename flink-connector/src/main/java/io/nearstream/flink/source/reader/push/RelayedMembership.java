package io.nearstream.flink.source.reader.push;

import io.nearstream.client.PushSplitStart;
import io.nearstream.flink.source.event.PushRingAssignedEvent;
import io.nearstream.flink.source.event.PushRingRequestEvent;
import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry.Attachment;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.connector.source.SourceEvent;

/**
 * A push reader whose host's subscription is held by the push group of another TaskManager JVM: it
 * sends its splits and positions there through the enumerator ({@link PushRingRequestEvent}) when
 * it joins, when they change and when it leaves, and reads the ring the answer names ({@link
 * PushRingAssignedEvent}). The ring lives in the same shared-memory region as the other JVM's
 * rings; the slots, heartbeats and releases go through it as for any member.
 *
 * <p>The membership owns the scheduler thread of its reader's periodic work (ring heartbeat,
 * pending refresh) and stops it in {@link #leave()}.
 */
@Internal
final class RelayedMembership implements PushMembership {

    private final int broker;
    private final int subtaskIndex;
    private final int leader;
    private final Consumer<SourceEvent> toEnumerator;
    private final Supplier<List<PushSplitStart>> positions;
    private final long answerTimeoutNanos;
    private final long askedAtNanos = System.nanoTime();
    private final ScheduledExecutorService scheduler;

    @Nullable private volatile Attachment attachment;
    @Nullable private volatile Exception failure;

    /**
     * A membership in {@code leader}'s group; {@link #join()} asks it for a ring.
     *
     * @param answerTimeoutMs how long to wait for the first answer before failing (the other JVM
     *     died, or its reader never started)
     */
    RelayedMembership(
            String stream,
            int broker,
            int subtaskIndex,
            int leader,
            Consumer<SourceEvent> toEnumerator,
            Supplier<List<PushSplitStart>> positions,
            long answerTimeoutMs) {
        this.broker = broker;
        this.subtaskIndex = subtaskIndex;
        this.leader = leader;
        this.toEnumerator = toEnumerator;
        this.positions = positions;
        this.answerTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(answerTimeoutMs);
        this.scheduler =
                Executors.newSingleThreadScheduledExecutor(
                        r -> {
                            Thread t =
                                    new Thread(r, "nearstream-push-" + stream + "-" + subtaskIndex);
                            t.setDaemon(true);
                            return t;
                        });
    }

    /** Asks for a ring (after the answer's receiver is in place). */
    void join() {
        send(false);
    }

    int leader() {
        return leader;
    }

    /** The holding group's answer (task thread). */
    void answered(PushRingAssignedEvent answer) {
        if (answer.attachment() != null) {
            failure = null;
            attachment = answer.attachment();
        } else {
            failure =
                    new IOException(
                            "Push subscription of subtask "
                                    + subtaskIndex
                                    + " (held by subtask "
                                    + leader
                                    + "'s TaskManager) failed: "
                                    + answer.failure());
        }
    }

    @Override
    @Nullable
    public Attachment attachment() {
        return attachment;
    }

    @Override
    @Nullable
    public Exception failure() {
        Exception f = failure;
        if (f == null
                && attachment == null
                && System.nanoTime() - askedAtNanos > answerTimeoutNanos) {
            f =
                    new IOException(
                            "No push ring for subtask "
                                    + subtaskIndex
                                    + " from subtask "
                                    + leader
                                    + "'s TaskManager within "
                                    + TimeUnit.NANOSECONDS.toMillis(answerTimeoutNanos)
                                    + " ms");
        }
        return f;
    }

    @Override
    public ScheduledFuture<?> schedule(Runnable task, long initialDelayMs, long periodMs) {
        return scheduler.scheduleWithFixedDelay(
                task, initialDelayMs, periodMs, TimeUnit.MILLISECONDS);
    }

    @Override
    public void splitsChanged() {
        send(false);
    }

    @Override
    public boolean leave() {
        scheduler.shutdownNow();
        try {
            send(true);
        } catch (RuntimeException e) {
            // Best effort: the task is closing; the ring stops being heartbeated either way and
            // the broker reclaims it after the consumer timeout.
        }
        return true;
    }

    private void send(boolean left) {
        toEnumerator.accept(
                new PushRingRequestEvent(
                        broker, subtaskIndex, leader, left ? List.of() : positions.get(), left));
    }
}
