package io.nearstream.client;

import java.util.List;

/**
 * One ring of a push subscription: the source subtask that consumes it and the splits the broker
 * pushes into it (ring {@code i} of the region belongs to the {@code i}-th spec of the request).
 */
public record PushRingSpec(int subtaskIndex, List<PushSplitStart> splits) {

    public PushRingSpec {
        splits = List.copyOf(splits);
    }
}
