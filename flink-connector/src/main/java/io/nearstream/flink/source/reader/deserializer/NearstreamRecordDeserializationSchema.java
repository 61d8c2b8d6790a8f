package io.nearstream.flink.source.reader.deserializer;

import io.nearstream.client.NearstreamRecord;
import java.io.IOException;
import java.io.Serializable;
import org.apache.flink.annotation.PublicEvolving;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.util.Collector;

/**
 * Turns {@link NearstreamRecord}s into the source's elements. Runs in the source reader's record
 * emitter, on the task thread; may emit zero, one or several elements per record.
 *
 * <pre>{@code
 * NearstreamRecordDeserializationSchema.utf8();                          // String
 * NearstreamRecordDeserializationSchema.bytes();                         // byte[]
 * NearstreamRecordDeserializationSchema.of(new JsonDeserializationSchema<>(Event.class));
 * }</pre>
 *
 * @param <T> the type of the source's elements
 */
@PublicEvolving
public interface NearstreamRecordDeserializationSchema<T>
        extends Serializable, ResultTypeQueryable<T> {

    /** Called once per reader before the first record (metrics, class loader). */
    default void open(DeserializationSchema.InitializationContext context) throws Exception {}

    /** Deserializes {@code record} into {@code out}. */
    void deserialize(NearstreamRecord record, Collector<T> out) throws IOException;

    /** Each record's bytes as they are (no extra copy). */
    static NearstreamRecordDeserializationSchema<byte[]> bytes() {
        return new BytesDeserializationSchema();
    }

    /** Each record's bytes decoded as UTF-8 (malformed input replaced, never failing). */
    static NearstreamRecordDeserializationSchema<String> utf8() {
        return new Utf8DeserializationSchema();
    }

    /** Each record's bytes through a Flink {@link DeserializationSchema}. */
    static <T> NearstreamRecordDeserializationSchema<T> of(DeserializationSchema<T> schema) {
        return new ValueOnlyDeserializationSchemaWrapper<>(schema);
    }
}
