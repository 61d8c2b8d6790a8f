package io.nearstream.flink.sink;

import java.io.Serializable;
import javax.annotation.Nullable;
import org.apache.flink.annotation.PublicEvolving;
import org.apache.flink.api.common.serialization.SerializationSchema;

/**
 * Turns a stream element into a {@link NearstreamSinkRecord}: its bytes, its key or streamlet, its
 * timestamp. Most jobs build one with {@link #builder()} from a value {@link SerializationSchema}.
 *
 * <pre>{@code
 * NearstreamRecordSerializationSchema.<Order>builder()
 *         .setValueSerializationSchema(new JsonSerializationSchema<>())
 *         .setKeySerializationSchema(order -> order.customerId().getBytes(UTF_8))
 *         .build();
 * }</pre>
 *
 * @param <T> the type of the elements
 */
@PublicEvolving
public interface NearstreamRecordSerializationSchema<T> extends Serializable {

    /** Called once per writer before the first {@link #serialize}. */
    default void open(
            SerializationSchema.InitializationContext context, NearstreamSinkContext sinkContext)
            throws Exception {}

    /**
     * @param timestamp the element's Flink timestamp, or null when it has none
     * @return the record to write, or null to write nothing for this element
     */
    @Nullable
    NearstreamSinkRecord serialize(
            T element, NearstreamSinkContext context, @Nullable Long timestamp);

    /** A builder of the usual schema: value bytes, then an optional key or streamlet selector. */
    static <T> NearstreamRecordSerializationSchemaBuilder<T> builder() {
        return new NearstreamRecordSerializationSchemaBuilder<>();
    }
}
