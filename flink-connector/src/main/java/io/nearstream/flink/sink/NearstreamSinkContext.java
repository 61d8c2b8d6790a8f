package io.nearstream.flink.sink;

import org.apache.flink.annotation.PublicEvolving;

/** What a {@link NearstreamRecordSerializationSchema} may want to know about the writer. */
@PublicEvolving
public interface NearstreamSinkContext {

    /** Number of streamlets of the stream the sink writes to. */
    int streamlets();

    /** The index of the writing subtask, from 0. */
    int subtaskIndex();

    /** Number of parallel writers. */
    int parallelism();
}
