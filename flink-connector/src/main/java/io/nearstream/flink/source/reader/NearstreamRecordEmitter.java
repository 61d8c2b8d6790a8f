package io.nearstream.flink.source.reader;

import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import io.nearstream.flink.source.reader.deserializer.ValueOnlyDeserializer;
import io.nearstream.flink.source.split.NearstreamSplitState;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.connector.base.source.reader.RecordEmitter;
import org.apache.flink.metrics.Counter;
import org.apache.flink.util.Collector;

/**
 * Emits a {@link RecordRun} record by record on the task thread: deserializes each record and emits
 * the results with the chunk's timestamp as their event timestamp, then advances the split's state
 * past the run. Checkpoints are taken between two runs (never inside this call, which runs on the
 * task thread), so one stores exactly "this chunk, n records done".
 *
 * <p>{@code SourceReaderBase} adds one to the operator's {@code numRecordsIn} per element; a run
 * holds {@code size()} records, so the emitter adds the rest, and the metric counts records as
 * users expect.
 */
@Internal
public class NearstreamRecordEmitter<T>
        implements RecordEmitter<RecordRun, T, NearstreamSplitState> {

    private final NearstreamRecordDeserializationSchema<T> deserializer;

    /** The same schema when it reads values only (no record needs to be made), else null. */
    @Nullable private final ValueOnlyDeserializer<T> valueOnly;

    private final Counter numRecordsIn;
    private final TimestampedCollector<T> collector = new TimestampedCollector<>();

    /**
     * @param numRecordsIn the reader's {@code numRecordsIn} counter (the one {@code
     *     SourceReaderBase} increments once per run)
     */
    @SuppressWarnings("unchecked") // ValueOnlyDeserializer<T> is only ever implemented for T
    public NearstreamRecordEmitter(
            NearstreamRecordDeserializationSchema<T> deserializer, Counter numRecordsIn) {
        this.deserializer = deserializer;
        this.valueOnly =
                deserializer instanceof ValueOnlyDeserializer<?>
                        ? (ValueOnlyDeserializer<T>) deserializer
                        : null;
        this.numRecordsIn = numRecordsIn;
    }

    @Override
    public void emitRecord(RecordRun run, SourceOutput<T> output, NearstreamSplitState state)
            throws Exception {
        int size = run.size();
        collector.output = output;
        collector.timestamp = run.chunkTimestampMs();
        if (valueOnly != null) {
            for (int i = 0; i < size; i++) {
                valueOnly.deserializeValue(run.value(i), collector);
            }
        } else {
            for (int i = 0; i < size; i++) {
                deserializer.deserialize(run.record(i), collector);
            }
        }
        if (size > 0) {
            // Once per run: no checkpoint can fall inside this call.
            state.recordEmitted(run.chunk(), run.firstIndex() + size - 1);
        }
        numRecordsIn.inc(size - 1L);
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
