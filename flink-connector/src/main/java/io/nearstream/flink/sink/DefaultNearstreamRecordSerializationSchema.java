package io.nearstream.flink.sink;

import javax.annotation.Nullable;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.util.function.SerializableFunction;

/** The schema {@link NearstreamRecordSerializationSchemaBuilder} builds. */
final class DefaultNearstreamRecordSerializationSchema<T>
        implements NearstreamRecordSerializationSchema<T> {

    private static final long serialVersionUID = 1L;

    private final SerializationSchema<? super T> valueSchema;
    @Nullable private final SerializationSchema<? super T> keySchema;
    @Nullable private final NearstreamStreamletSelector<? super T> streamletSelector;
    @Nullable private final SerializableFunction<? super T, Long> timestampExtractor;

    DefaultNearstreamRecordSerializationSchema(
            SerializationSchema<? super T> valueSchema,
            @Nullable SerializationSchema<? super T> keySchema,
            @Nullable NearstreamStreamletSelector<? super T> streamletSelector,
            @Nullable SerializableFunction<? super T, Long> timestampExtractor) {
        this.valueSchema = valueSchema;
        this.keySchema = keySchema;
        this.streamletSelector = streamletSelector;
        this.timestampExtractor = timestampExtractor;
    }

    @Override
    public void open(
            SerializationSchema.InitializationContext context, NearstreamSinkContext sinkContext)
            throws Exception {
        valueSchema.open(context);
        if (keySchema != null) {
            keySchema.open(context);
        }
    }

    @Override
    public NearstreamSinkRecord serialize(
            T element, NearstreamSinkContext context, @Nullable Long timestamp) {
        byte[] value = valueSchema.serialize(element);
        byte[] key = keySchema == null ? null : keySchema.serialize(element);
        int streamlet = NearstreamSinkRecord.ANY_STREAMLET;
        if (streamletSelector != null) {
            streamlet = streamletSelector.streamlet(element, context.streamlets());
            // -1 would silently mean "any streamlet": a selector must pick one.
            if (streamlet < 0 || streamlet >= context.streamlets()) {
                throw new IllegalArgumentException(
                        "the streamlet selector picked streamlet "
                                + streamlet
                                + " of a stream with "
                                + context.streamlets()
                                + " streamlets");
            }
        }
        Long ts = timestampExtractor != null ? timestampExtractor.apply(element) : timestamp;
        return new NearstreamSinkRecord(
                key, value, streamlet, ts != null ? ts : NearstreamSinkRecord.NO_TIMESTAMP);
    }
}
