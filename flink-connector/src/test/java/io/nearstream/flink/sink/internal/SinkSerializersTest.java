package io.nearstream.flink.sink.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.BrokerTxnRef;
import java.io.IOException;
import java.util.HexFormat;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The committable and writer state serializers: round trips, the checked-in bytes of the current
 * version 2 (transactions per broker), and restoring the version 1 bytes that sinks wrote before
 * transactions spanned brokers. Never change those: a failing test means old checkpoints no longer
 * restore.
 */
class SinkSerializersTest {

    private static final String COMMITTABLE_V1_HEX =
            "0001"
                    + "73" // "s"
                    + "0003"
                    + "742d30" // "t-0"
                    + "00000000ffffffff" // epoch 2^32 - 1
                    + "fffffffffffffffe"; // serial 2^64 - 2

    private static final String COMMITTABLE_V2_HEX = COMMITTABLE_V1_HEX + "00000003"; // broker 3

    private static final String STATE_V1_HEX = "0003" + "742d30" + "0000000000000007";

    private static final String STATE_V2_HEX =
            "0003"
                    + "742d30" // "t-0"
                    + "00000002" // two brokers, ascending
                    + "00000001"
                    + "0000000000000007" // broker 1: serial 7
                    + "00000004"
                    + "0000000000000009"; // broker 4: serial 9

    @Test
    void committableRoundTripsKeepsItsV2BytesAndRestoresV1AsOneBrokers() throws IOException {
        NearstreamCommittableSerializer s = new NearstreamCommittableSerializer();
        assertThat(s.getVersion()).isEqualTo(2);
        NearstreamCommittable c = new NearstreamCommittable("s", 3, "t-0", 0xFFFFFFFFL, -2L);
        byte[] bytes = s.serialize(c);
        assertThat(HexFormat.of().formatHex(bytes)).isEqualTo(COMMITTABLE_V2_HEX);
        assertThat(s.deserialize(2, bytes)).isEqualTo(c);
        assertThat(s.deserialize(2, bytes).part().ref().epoch()).isEqualTo(0xFFFFFFFFL);
        assertThat(s.deserialize(2, bytes).part().broker()).isEqualTo(3);

        NearstreamCommittable v1 = s.deserialize(1, HexFormat.of().parseHex(COMMITTABLE_V1_HEX));
        assertThat(v1)
                .isEqualTo(
                        new NearstreamCommittable(
                                "s", BrokerTxnRef.ONLY_BROKER, "t-0", 0xFFFFFFFFL, -2L));
        assertThatThrownBy(() -> s.deserialize(3, bytes)).hasMessageContaining("version 3");
    }

    @Test
    void writerStateRoundTripsKeepsItsV2BytesAndRestoresV1AsOneBrokers() throws IOException {
        NearstreamWriterStateSerializer s = new NearstreamWriterStateSerializer();
        assertThat(s.getVersion()).isEqualTo(2);
        NearstreamWriterState state = new NearstreamWriterState("t-0", Map.of(4, 9L, 1, 7L));
        byte[] bytes = s.serialize(state);
        assertThat(HexFormat.of().formatHex(bytes)).isEqualTo(STATE_V2_HEX);
        assertThat(s.deserialize(2, bytes)).isEqualTo(state);
        NearstreamWriterState unicode = new NearstreamWriterState("jöb-4-3", Map.of());
        assertThat(s.deserialize(2, s.serialize(unicode))).isEqualTo(unicode);

        assertThat(s.deserialize(1, HexFormat.of().parseHex(STATE_V1_HEX)))
                .isEqualTo(new NearstreamWriterState("t-0", Map.of(BrokerTxnRef.ONLY_BROKER, 7L)));
        assertThat(s.deserialize(1, HexFormat.of().parseHex("0003742d300000000000000000")))
                .as("serial 0: nothing prepared")
                .isEqualTo(new NearstreamWriterState("t-0", Map.of()));
        assertThatThrownBy(() -> s.deserialize(0, bytes)).isInstanceOf(IOException.class);
    }
}
