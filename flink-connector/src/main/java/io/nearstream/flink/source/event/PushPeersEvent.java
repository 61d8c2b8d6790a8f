package io.nearstream.flink.source.event;

import java.util.List;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.connector.source.SourceEvent;

/**
 * Sent by the enumerator to every reader of one election scope (see {@link ReaderStartedEvent})
 * before it assigns them splits: the subtasks of that scope that hold splits. Their push group
 * subscribes once all of them have joined, so a job start makes exactly one push subscribe per
 * scope instead of one more for every reader that joins late.
 *
 * @param subtasks sorted subtask indexes
 */
@Internal
public record PushPeersEvent(List<Integer> subtasks) implements SourceEvent {
    public PushPeersEvent {
        subtasks = List.copyOf(subtasks);
    }
}
