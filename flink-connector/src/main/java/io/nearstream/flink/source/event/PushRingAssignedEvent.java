package io.nearstream.flink.source.event;

import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry.Attachment;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.connector.source.SourceEvent;

/**
 * The answer to a {@link PushRingRequestEvent}, from the group holding the host's subscription to
 * one broker through the enumerator to the asking reader: the ring it reads now, or why the group's
 * last push RPC failed.
 *
 * @param broker the broker of the answering push group
 * @param subtask the reader the ring belongs to
 * @param attachment the region and ring to read, or null on failure
 * @param failure what failed, or null
 */
@Internal
public record PushRingAssignedEvent(
        int broker, int subtask, @Nullable Attachment attachment, @Nullable String failure)
        implements SourceEvent {}
