package io.nearstream.flink.source.event;

import io.nearstream.client.PushSplitStart;
import java.util.List;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.connector.source.SourceEvent;

/**
 * A push reader whose host's subscription (to one broker) lives in another TaskManager JVM asks for
 * its ring, or tells that its splits changed or that it left. Sent to the enumerator, which
 * forwards it unchanged to {@link #leader}; that reader's push group of the same broker treats
 * {@link #subtask} as a member and answers with a {@link PushRingAssignedEvent}.
 *
 * @param broker the broker whose push group is asked
 * @param subtask the asking reader
 * @param leader the reader whose group holds the host's subscription ({@link
 *     PushPeersEvent#relayTo()})
 * @param splits the asking reader's splits with the positions they continue at (empty when it left)
 * @param left whether the reader closed: its ring gets no splits any more
 */
@Internal
public record PushRingRequestEvent(
        int broker, int subtask, int leader, List<PushSplitStart> splits, boolean left)
        implements SourceEvent {
    public PushRingRequestEvent {
        splits = List.copyOf(splits);
    }
}
