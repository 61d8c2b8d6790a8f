package io.nearstream.flink.source.event;

import java.util.List;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.connector.source.SourceEvent;

/**
 * Sent by the enumerator to every reader of one host before it assigns them splits, once per broker
 * the host's readers push from: the subtasks on that host that hold splits of that broker, and
 * where their one push subscription to it lives. The push group of the lowest such subtask, in that
 * subtask's TaskManager JVM, subscribes once all of them have joined - the readers of that JVM
 * directly, the readers of other JVMs on the host through {@link PushRingRequestEvent}s - so a job
 * start makes exactly one push subscribe per host and broker.
 *
 * @param broker the broker whose push group this is ({@code StreamLocality.STANDALONE_BROKER} for a
 *     standalone broker)
 * @param subtasks sorted subtask indexes of the host's holders of that broker's splits
 * @param relayTo {@link #HOLDS_SUBSCRIPTION} when the reader's JVM holds the host's subscription;
 *     otherwise the subtask (in another JVM of the host) whose group holds it, which the reader
 *     asks for its ring
 */
@Internal
public record PushPeersEvent(int broker, List<Integer> subtasks, int relayTo)
        implements SourceEvent {

    /** {@link #relayTo} of a reader whose own JVM holds the host's subscription. */
    public static final int HOLDS_SUBSCRIPTION = -1;

    public PushPeersEvent {
        subtasks = List.copyOf(subtasks);
    }

    public boolean relayed() {
        return relayTo != HOLDS_SUBSCRIPTION;
    }
}
