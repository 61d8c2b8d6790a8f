package io.nearstream.flink.source.reader.deserializer;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.NearstreamRecord;
import io.nearstream.client.Position;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.util.Collector;
import org.apache.flink.util.InstantiationUtil;
import org.junit.jupiter.api.Test;

/** The built-in deserializers (after Java serialization, as Flink ships them). */
class NearstreamRecordDeserializationSchemaTest {

    private static final NearstreamRecord RECORD =
            new NearstreamRecord(
                    2, new Position(1, 1, 0), 0, 7, "héllo".getBytes(StandardCharsets.UTF_8));

    private static <T> List<T> deserialize(NearstreamRecordDeserializationSchema<T> schema)
            throws Exception {
        List<T> out = new ArrayList<>();
        InstantiationUtil.clone(schema)
                .deserialize(
                        RECORD,
                        new Collector<>() {
                            @Override
                            public void collect(T record) {
                                out.add(record);
                            }

                            @Override
                            public void close() {}
                        });
        return out;
    }

    @Test
    void bytesHandsOutTheRecordsArray() throws Exception {
        NearstreamRecordDeserializationSchema<byte[]> bytes =
                NearstreamRecordDeserializationSchema.bytes();
        assertThat(deserialize(bytes)).containsExactly(RECORD.value());
        assertThat(bytes.getProducedType())
                .isEqualTo(PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);
    }

    @Test
    void utf8DecodesStrings() throws Exception {
        assertThat(deserialize(NearstreamRecordDeserializationSchema.utf8()))
                .containsExactly("héllo");
        assertThat(NearstreamRecordDeserializationSchema.utf8().getProducedType())
                .isEqualTo(Types.STRING);
    }

    @Test
    void wrapsFlinkDeserializationSchemas() throws Exception {
        NearstreamRecordDeserializationSchema<String> wrapped =
                NearstreamRecordDeserializationSchema.of(new SimpleStringSchema());
        assertThat(deserialize(wrapped)).containsExactly("héllo");
        assertThat(wrapped.getProducedType()).isEqualTo(Types.STRING);
    }
}
