package io.nearstream.flink.source.event;

import java.util.List;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.connector.source.SourceEvent;

/**
 * Sent by the enumerator to every reader of one host before it assigns them splits: the subtasks on
 * that host that hold splits, and where their one push subscription lives. The push group of the
 * host's lowest split-holding subtask, in that subtask's TaskManager JVM, subscribes once all of
 * them have joined - the readers of that JVM directly, the readers of other JVMs on the host
 * through {@link PushRingRequestEvent}s - so a job start makes exactly one push subscribe per host.
 *
 * @param subtasks sorted subtask indexes of the host's split holders
 * @param relayTo {@link #HOLDS_SUBSCRIPTION} when the reader's JVM holds the host's subscription;
 *     otherwise the subtask (in another JVM of the host) whose group holds it, which the reader
 *     asks for its ring
 */
@Internal
public record PushPeersEvent(List<Integer> subtasks, int relayTo) implements SourceEvent {

    /** {@link #relayTo} of a reader whose own JVM holds the host's subscription. */
    public static final int HOLDS_SUBSCRIPTION = -1;

    public PushPeersEvent {
        subtasks = List.copyOf(subtasks);
    }

    public boolean relayed() {
        return relayTo != HOLDS_SUBSCRIPTION;
    }
}
