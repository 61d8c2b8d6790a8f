package io.nearstream.flink.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.junit.jupiter.api.Test;

/** The schema the builder makes: bytes, key or streamlet, timestamp. */
class NearstreamRecordSerializationSchemaTest {

    private static final NearstreamSinkContext FOUR_STREAMLETS =
            new NearstreamSinkContext() {
                @Override
                public int streamlets() {
                    return 4;
                }

                @Override
                public int subtaskIndex() {
                    return 0;
                }

                @Override
                public int parallelism() {
                    return 1;
                }
            };

    @Test
    void valueOnlyGoesToAnyStreamletWithTheFlinkTimestamp() {
        NearstreamRecordSerializationSchema<String> schema =
                NearstreamRecordSerializationSchema.<String>builder()
                        .setValueSerializationSchema(new SimpleStringSchema())
                        .build();
        NearstreamSinkRecord r = schema.serialize("héllo", FOUR_STREAMLETS, 1234L);
        assertThat(new String(r.value(), StandardCharsets.UTF_8)).isEqualTo("héllo");
        assertThat(r.key()).isNull();
        assertThat(r.streamlet()).isEqualTo(NearstreamSinkRecord.ANY_STREAMLET);
        assertThat(r.timestampMs()).isEqualTo(1234L);
        assertThat(r.size()).isEqualTo(6);

        assertThat(schema.serialize("x", FOUR_STREAMLETS, null).timestampMs())
                .as("no Flink timestamp: the producer stamps the chunk when it begins")
                .isEqualTo(NearstreamSinkRecord.NO_TIMESTAMP);
    }

    @Test
    void keyAndTimestampExtractor() {
        NearstreamRecordSerializationSchema<String> schema =
                NearstreamRecordSerializationSchema.<String>builder()
                        .setValueSerializationSchema(new SimpleStringSchema())
                        .setKeySerializationSchema(s -> s.substring(0, 1).getBytes())
                        .setTimestampExtractor(s -> (long) s.length())
                        .build();
        NearstreamSinkRecord r = schema.serialize("abc", FOUR_STREAMLETS, 99L);
        assertThat(r.key()).containsExactly('a');
        assertThat(r.timestampMs()).isEqualTo(3);
        assertThat(r.size()).isEqualTo(4);
    }

    @Test
    void streamletSelectorMustPickAStreamletOfTheStream() {
        NearstreamRecordSerializationSchema<String> schema =
                NearstreamRecordSerializationSchema.<String>builder()
                        .setValueSerializationSchema(new SimpleStringSchema())
                        .setStreamletSelector((s, n) -> Integer.parseInt(s))
                        .build();
        assertThat(schema.serialize("3", FOUR_STREAMLETS, 0L).streamlet()).isEqualTo(3);
        assertThatThrownBy(() -> schema.serialize("4", FOUR_STREAMLETS, 0L))
                .hasMessageContaining("picked streamlet 4 of a stream with 4 streamlets");
        assertThatThrownBy(() -> schema.serialize("-1", FOUR_STREAMLETS, 0L))
                .hasMessageContaining("picked streamlet -1");
    }

    @Test
    void builderRefusesWhatCannotWork() {
        assertThatThrownBy(() -> NearstreamRecordSerializationSchema.<String>builder().build())
                .hasMessageContaining("setValueSerializationSchema");
        assertThatThrownBy(
                        () ->
                                NearstreamRecordSerializationSchema.<String>builder()
                                        .setValueSerializationSchema(new SimpleStringSchema())
                                        .setKeySerializationSchema(new SimpleStringSchema())
                                        .setStreamletSelector((s, n) -> 0)
                                        .build())
                .hasMessageContaining("not both");
    }
}
