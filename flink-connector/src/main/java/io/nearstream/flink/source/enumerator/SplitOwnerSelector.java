package io.nearstream.flink.source.enumerator;

import java.util.List;
import org.apache.flink.annotation.Internal;

/**
 * Picks the reader (subtask) that owns a streamlet's split.
 *
 * <p>The rule: when some readers run on the broker's host, the split goes to one of them, {@code
 * localReaders[streamlet mod localReaders.size()]} with the local readers sorted by subtask index;
 * when none does, to subtask {@code streamlet mod parallelism}. With the same placement the answer
 * is always the same, so a split returned after a failure goes back to the same subtask.
 */
@Internal
public final class SplitOwnerSelector {

    private SplitOwnerSelector() {}

    /**
     * @param streamlet the split's streamlet
     * @param parallelism the source's parallelism
     * @param localReaders subtask indexes running on the broker's host, ascending
     */
    public static int owner(int streamlet, int parallelism, List<Integer> localReaders) {
        if (localReaders.isEmpty()) {
            return streamlet % parallelism;
        }
        return localReaders.get(streamlet % localReaders.size());
    }
}
