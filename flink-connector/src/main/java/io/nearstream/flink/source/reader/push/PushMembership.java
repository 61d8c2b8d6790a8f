package io.nearstream.flink.source.reader.push;

import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry.Attachment;
import java.util.concurrent.ScheduledFuture;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;

/**
 * A push reader's hold on its host's push subscription: a member of its own JVM's group ({@link
 * PushSubscriptionRegistry.Member}), or a member relayed to the group of another JVM on the host
 * ({@link RelayedMembership}). The reader only sees the ring it reads and the failures to report.
 */
@Internal
public interface PushMembership {

    /** The ring to read, or null before the first subscription. */
    @Nullable
    Attachment attachment();

    /** Why the group's last push RPC failed, or null. */
    @Nullable
    Exception failure();

    /**
     * Runs {@code task} every {@code periodMs} (after {@code initialDelayMs}) on a scheduler thread
     * owned by the membership, until the returned future is cancelled or the membership ends. A
     * task must not block: it may share the thread with others.
     */
    ScheduledFuture<?> schedule(Runnable task, long initialDelayMs, long periodMs);

    /** The member's splits or their positions changed: the subscription follows. */
    void splitsChanged();

    /**
     * Leaves: this member's ring gets no splits any more; the scheduler thread ends when no member
     * uses it.
     *
     * @return whether the caller must close its connection itself (false: the group took it over,
     *     because it carries the subscription of the others)
     */
    boolean leave();
}
