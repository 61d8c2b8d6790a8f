package io.nearstream.flink.source.event;

import java.util.Set;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.connector.source.SourceEvent;

/**
 * Sent by every reader to the enumerator when it starts, after its restored splits were added.
 *
 * @param electionScope identifies the push election scope the reader belongs to: its JVM's (more
 *     exactly, its class loader's) {@code PushSubscriptionRegistry}; readers with the same scope
 *     share one push subscription per broker
 * @param restoredPushBrokers the brokers of the pushed splits the reader restored from a checkpoint
 *     (empty: none), which the enumerator cannot know otherwise
 */
@Internal
public record ReaderStartedEvent(String electionScope, Set<Integer> restoredPushBrokers)
        implements SourceEvent {

    public ReaderStartedEvent {
        restoredPushBrokers = Set.copyOf(restoredPushBrokers);
    }
}
