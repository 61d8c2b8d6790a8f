package io.nearstream.flink.source.reader.deserializer;

import static org.apache.flink.util.Preconditions.checkNotNull;

import io.nearstream.client.NearstreamRecord;
import java.io.IOException;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.util.Collector;

/** Adapts a Flink {@link DeserializationSchema} to the record's bytes. */
@Internal
final class ValueOnlyDeserializationSchemaWrapper<T>
        implements NearstreamRecordDeserializationSchema<T>, ValueOnlyDeserializer<T> {

    private static final long serialVersionUID = 1L;

    private final DeserializationSchema<T> schema;

    ValueOnlyDeserializationSchemaWrapper(DeserializationSchema<T> schema) {
        this.schema = checkNotNull(schema, "deserialization schema");
    }

    @Override
    public void open(DeserializationSchema.InitializationContext context) throws Exception {
        schema.open(context);
    }

    @Override
    public void deserialize(NearstreamRecord record, Collector<T> out) throws IOException {
        deserializeValue(record.value(), out);
    }

    @Override
    public void deserializeValue(byte[] value, Collector<T> out) throws IOException {
        schema.deserialize(value, out);
    }

    @Override
    public TypeInformation<T> getProducedType() {
        return schema.getProducedType();
    }
}
