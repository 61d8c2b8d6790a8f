package io.nearstream.flink.source.reader.deserializer;

import io.nearstream.client.NearstreamRecord;
import java.nio.charset.StandardCharsets;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.util.Collector;

/** Decodes each record as a UTF-8 string. */
@Internal
final class Utf8DeserializationSchema
        implements NearstreamRecordDeserializationSchema<String>, ValueOnlyDeserializer<String> {

    private static final long serialVersionUID = 1L;

    @Override
    public void deserialize(NearstreamRecord record, Collector<String> out) {
        deserializeValue(record.value(), out);
    }

    @Override
    public void deserializeValue(byte[] value, Collector<String> out) {
        out.collect(new String(value, StandardCharsets.UTF_8));
    }

    @Override
    public TypeInformation<String> getProducedType() {
        return Types.STRING;
    }
}
