package io.nearstream.flink.source.reader;

import io.nearstream.client.NearstreamRecord;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import io.nearstream.flink.source.split.NearstreamSplitState;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.connector.base.source.reader.RecordEmitter;
import org.apache.flink.util.Collector;

/**
 * Deserializes each {@link NearstreamRecord} on the task thread, emits the results with the chunk's
 * timestamp as their event timestamp, then advances the split's state past the record. A checkpoint
 * between two records therefore stores exactly "this chunk, n records done".
 */
@Internal
public class NearstreamRecordEmitter<T>
        implements RecordEmitter<NearstreamRecord, T, NearstreamSplitState> {

    private final NearstreamRecordDeserializationSchema<T> deserializer;
    private final TimestampedCollector<T> collector = new TimestampedCollector<>();

    public NearstreamRecordEmitter(NearstreamRecordDeserializationSchema<T> deserializer) {
        this.deserializer = deserializer;
    }

    @Override
    public void emitRecord(
            NearstreamRecord record, SourceOutput<T> output, NearstreamSplitState state)
            throws Exception {
        collector.output = output;
        collector.timestamp = record.chunkTimestampMs();
        deserializer.deserialize(record, collector);
        state.recordEmitted(record.chunk(), record.index());
    }

    /** Forwards deserialized elements to the split's output with the chunk timestamp. */
    private static final class TimestampedCollector<T> implements Collector<T> {
        SourceOutput<T> output;
        long timestamp;

        @Override
        public void collect(T element) {
            output.collect(element, timestamp);
        }

        @Override
        public void close() {}
    }
}
