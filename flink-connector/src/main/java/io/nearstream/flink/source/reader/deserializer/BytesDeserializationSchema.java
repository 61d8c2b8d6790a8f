package io.nearstream.flink.source.reader.deserializer;

import io.nearstream.client.NearstreamRecord;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.util.Collector;

/** Emits each record's bytes; the reader copied them out of the fetch response already. */
@Internal
final class BytesDeserializationSchema
        implements NearstreamRecordDeserializationSchema<byte[]>, ValueOnlyDeserializer<byte[]> {

    private static final long serialVersionUID = 1L;

    @Override
    public void deserialize(NearstreamRecord record, Collector<byte[]> out) {
        deserializeValue(record.value(), out);
    }

    @Override
    public void deserializeValue(byte[] value, Collector<byte[]> out) {
        out.collect(value);
    }

    @Override
    public TypeInformation<byte[]> getProducedType() {
        return PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO;
    }
}
