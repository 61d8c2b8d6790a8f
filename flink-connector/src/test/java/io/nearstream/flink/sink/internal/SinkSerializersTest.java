package io.nearstream.flink.sink.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/**
 * The committable and writer state serializers: round trips, and the checked-in version 1 bytes.
 * Never change those: a failing test means old checkpoints no longer restore.
 */
class SinkSerializersTest {

    private static final String COMMITTABLE_V1_HEX =
            "0001"
                    + "73" // "s"
                    + "0003"
                    + "742d30" // "t-0"
                    + "00000000ffffffff" // epoch 2^32 - 1
                    + "fffffffffffffffe"; // serial 2^64 - 2

    private static final String STATE_V1_HEX = "0003" + "742d30" + "0000000000000007";

    @Test
    void committableRoundTripsAndKeepsItsV1Bytes() throws IOException {
        NearstreamCommittableSerializer s = new NearstreamCommittableSerializer();
        NearstreamCommittable c = new NearstreamCommittable("s", "t-0", 0xFFFFFFFFL, -2L);
        byte[] bytes = s.serialize(c);
        assertThat(HexFormat.of().formatHex(bytes)).isEqualTo(COMMITTABLE_V1_HEX);
        assertThat(s.deserialize(1, bytes)).isEqualTo(c);
        assertThat(s.deserialize(1, bytes).ref().epoch()).isEqualTo(0xFFFFFFFFL);
        assertThatThrownBy(() -> s.deserialize(2, bytes)).hasMessageContaining("version 2");
    }

    @Test
    void writerStateRoundTripsAndKeepsItsV1Bytes() throws IOException {
        NearstreamWriterStateSerializer s = new NearstreamWriterStateSerializer();
        NearstreamWriterState state = new NearstreamWriterState("t-0", 7);
        byte[] bytes = s.serialize(state);
        assertThat(HexFormat.of().formatHex(bytes)).isEqualTo(STATE_V1_HEX);
        assertThat(s.deserialize(1, bytes)).isEqualTo(state);
        NearstreamWriterState unicode = new NearstreamWriterState("jöb-4-3", 0);
        assertThat(s.deserialize(1, s.serialize(unicode))).isEqualTo(unicode);
        assertThatThrownBy(() -> s.deserialize(0, bytes)).isInstanceOf(IOException.class);
    }
}
