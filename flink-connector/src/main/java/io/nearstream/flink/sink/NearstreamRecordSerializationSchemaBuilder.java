package io.nearstream.flink.sink;

import static org.apache.flink.util.Preconditions.checkNotNull;
import static org.apache.flink.util.Preconditions.checkState;

import javax.annotation.Nullable;
import org.apache.flink.annotation.PublicEvolving;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.util.function.SerializableFunction;

/**
 * Builds a {@link NearstreamRecordSerializationSchema}. Required: {@link
 * #setValueSerializationSchema}. The streamlet comes from at most one of {@link
 * #setKeySerializationSchema} (the key's murmur2 hash, as Kafka's default partitioner: equal keys
 * go to the same streamlet) and {@link #setStreamletSelector}; with neither, records go
 * round-robin. The timestamp is the element's Flink timestamp (the current time when it has none)
 * unless {@link #setTimestampExtractor} says otherwise.
 *
 * @param <T> the type of the elements
 */
@PublicEvolving
public class NearstreamRecordSerializationSchemaBuilder<T> {

    @Nullable private SerializationSchema<? super T> valueSchema;
    @Nullable private SerializationSchema<? super T> keySchema;
    @Nullable private NearstreamStreamletSelector<? super T> streamletSelector;
    @Nullable private SerializableFunction<? super T, Long> timestampExtractor;

    NearstreamRecordSerializationSchemaBuilder() {}

    /** How an element becomes the record's bytes. */
    public NearstreamRecordSerializationSchemaBuilder<T> setValueSerializationSchema(
            SerializationSchema<? super T> schema) {
        this.valueSchema = checkNotNull(schema, "value serialization schema");
        return this;
    }

    /** The key whose murmur2 hash picks the streamlet (a null key: round-robin). */
    public NearstreamRecordSerializationSchemaBuilder<T> setKeySerializationSchema(
            SerializationSchema<? super T> schema) {
        this.keySchema = checkNotNull(schema, "key serialization schema");
        return this;
    }

    /** Picks each element's streamlet itself. */
    public NearstreamRecordSerializationSchemaBuilder<T> setStreamletSelector(
            NearstreamStreamletSelector<? super T> selector) {
        this.streamletSelector = checkNotNull(selector, "streamlet selector");
        return this;
    }

    /** The record's timestamp (ms since the Unix epoch) from the element. */
    public NearstreamRecordSerializationSchemaBuilder<T> setTimestampExtractor(
            SerializableFunction<? super T, Long> extractor) {
        this.timestampExtractor = checkNotNull(extractor, "timestamp extractor");
        return this;
    }

    public NearstreamRecordSerializationSchema<T> build() {
        checkState(
                valueSchema != null,
                "No value serialization schema set: call setValueSerializationSchema(...)");
        checkState(
                keySchema == null || streamletSelector == null,
                "Set a key serialization schema or a streamlet selector, not both: both pick the"
                        + " streamlet");
        return new DefaultNearstreamRecordSerializationSchema<>(
                valueSchema, keySchema, streamletSelector, timestampExtractor);
    }
}
