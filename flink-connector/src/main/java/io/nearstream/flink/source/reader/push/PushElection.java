package io.nearstream.flink.source.reader.push;

import io.nearstream.flink.source.event.PushPeersEvent;
import io.nearstream.flink.source.event.PushRingAssignedEvent;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.connector.source.SourceEvent;

/**
 * One push reader's word from the enumerator on where its host's push subscription to one broker
 * lives (a reader pushing from several brokers of its host has one election each), shared by the
 * reader (task thread: {@link #told}, {@link #answered}) and its split reader (fetcher thread:
 * {@link #decide}, {@link #relayed}).
 *
 * <p>A reader that gets splits from the enumerator has the word already (it is sent before them). A
 * reader that restored splits from a checkpoint has them before it could ask; it waits for the word
 * up to {@link PushSubscriptionRegistry#PEER_WAIT_MS} ms, then joins its own JVM's group.
 */
@Internal
public final class PushElection {

    /** Where this reader's ring comes from. */
    public enum Decision {
        /** Not known yet: wait. */
        WAIT,
        /** This JVM's group holds the host's subscription: join it. */
        LOCAL,
        /** Another JVM of the host holds it: ask there through the enumerator. */
        RELAYED
    }

    private static final int UNKNOWN = -2;

    private final int broker;
    private final Consumer<SourceEvent> toEnumerator;
    private final long waitNanos;
    private final long createdNanos = System.nanoTime();

    private volatile int relayTo = UNKNOWN;
    private volatile boolean restoredSplits;
    @Nullable private volatile RelayedMembership relayed;

    /**
     * @param broker the broker whose push group this is (stamped on the events it sends)
     * @param toEnumerator sends an event to the enumerator (the reader context's, thread-safe)
     */
    public PushElection(int broker, Consumer<SourceEvent> toEnumerator) {
        this(broker, toEnumerator, PushSubscriptionRegistry.PEER_WAIT_MS);
    }

    PushElection(int broker, Consumer<SourceEvent> toEnumerator, long waitMs) {
        this.broker = broker;
        this.toEnumerator = toEnumerator;
        this.waitNanos = TimeUnit.MILLISECONDS.toNanos(waitMs);
    }

    /** The reader restored splits before it could hear from the enumerator. */
    public void restoredSplits() {
        restoredSplits = true;
    }

    /** The enumerator's word (task thread). */
    public void told(PushPeersEvent peers) {
        relayTo = peers.relayTo();
    }

    /** The answer of the group holding this reader's ring (task thread). */
    public void answered(PushRingAssignedEvent answer) {
        RelayedMembership m = relayed;
        if (m != null) {
            m.answered(answer);
        }
    }

    /** Where the split reader's ring comes from now (fetcher thread). */
    public Decision decide() {
        int r = relayTo;
        if (r == UNKNOWN) {
            boolean waiting = restoredSplits && System.nanoTime() - createdNanos < waitNanos;
            return waiting ? Decision.WAIT : Decision.LOCAL;
        }
        return r == PushPeersEvent.HOLDS_SUBSCRIPTION ? Decision.LOCAL : Decision.RELAYED;
    }

    /** The subtask whose group holds the ring, when {@link #decide()} said RELAYED. */
    int relayTo() {
        return relayTo;
    }

    /** The broker whose push group this is. */
    public int broker() {
        return broker;
    }

    Consumer<SourceEvent> toEnumerator() {
        return toEnumerator;
    }

    /** The split reader joined through the enumerator: answers go to {@code membership}. */
    void relayed(RelayedMembership membership) {
        relayed = membership;
    }
}
