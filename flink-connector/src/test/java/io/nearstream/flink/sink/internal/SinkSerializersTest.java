package io.nearstream.flink.sink.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.BrokerTxnRef;
import io.nearstream.client.TxnRef;
import java.io.IOException;
import java.util.HexFormat;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The committable and writer state serializers: round trips, the checked-in bytes of the current
 * version 3 (parts per broker or, on a replicated stream, per streamlet scope), and restoring the
 * version 2 bytes that sinks wrote before replicated streams took transactions (broker parts) and
 * the version 1 bytes written before transactions spanned brokers. Never change those: a failing
 * test means old checkpoints no longer restore.
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

    private static final String COMMITTABLE_V3_HEX = COMMITTABLE_V2_HEX + "00000005"; // streamlet 5

    private static final String COMMITTABLE_V3_BROKER_SCOPE_HEX =
            COMMITTABLE_V2_HEX + "ffffffff"; // the broker scope

    private static final String STATE_V1_HEX = "0003" + "742d30" + "0000000000000007";

    private static final String STATE_V2_HEX =
            "0003"
                    + "742d30" // "t-0"
                    + "00000002" // two brokers, ascending
                    + "00000001"
                    + "0000000000000007" // broker 1: serial 7
                    + "00000004"
                    + "0000000000000009"; // broker 4: serial 9

    private static final String STATE_V3_HEX =
            "0003"
                    + "742d30" // "t-0"
                    + "01" // parts are streamlets
                    + "00000002" // two streamlets, ascending
                    + "00000000"
                    + "0000000000000007" // streamlet 0: serial 7
                    + "00000002"
                    + "0000000000000009"; // streamlet 2: serial 9

    @Test
    void committableRoundTripsKeepsItsV3BytesAndRestoresV2AndV1InTheBrokerScope()
            throws IOException {
        NearstreamCommittableSerializer s = new NearstreamCommittableSerializer();
        assertThat(s.getVersion()).isEqualTo(3);
        NearstreamCommittable c = new NearstreamCommittable("s", 3, "t-0", 0xFFFFFFFFL, -2L, 5);
        byte[] bytes = s.serialize(c);
        assertThat(HexFormat.of().formatHex(bytes)).isEqualTo(COMMITTABLE_V3_HEX);
        assertThat(s.deserialize(3, bytes)).isEqualTo(c);
        BrokerTxnRef part = s.deserialize(3, bytes).part();
        assertThat(part.ref().epoch()).isEqualTo(0xFFFFFFFFL);
        assertThat(part.broker()).isEqualTo(3);
        assertThat(part.ref().scope()).isEqualTo(5);
        assertThat(part.partKey()).as("a streamlet scope's part is its streamlet's").isEqualTo(5);

        NearstreamCommittable brokerScope =
                new NearstreamCommittable("s", 3, "t-0", 0xFFFFFFFFL, -2L);
        byte[] brokerScopeBytes = s.serialize(brokerScope);
        assertThat(HexFormat.of().formatHex(brokerScopeBytes))
                .isEqualTo(COMMITTABLE_V3_BROKER_SCOPE_HEX);
        assertThat(s.deserialize(3, brokerScopeBytes)).isEqualTo(brokerScope);

        NearstreamCommittable v2 = s.deserialize(2, HexFormat.of().parseHex(COMMITTABLE_V2_HEX));
        assertThat(v2).isEqualTo(brokerScope);
        assertThat(v2.scope()).isEqualTo(TxnRef.BROKER_SCOPE);
        assertThat(v2.part().partKey()).isEqualTo(3);

        NearstreamCommittable v1 = s.deserialize(1, HexFormat.of().parseHex(COMMITTABLE_V1_HEX));
        assertThat(v1)
                .isEqualTo(
                        new NearstreamCommittable(
                                "s",
                                BrokerTxnRef.ONLY_BROKER,
                                "t-0",
                                0xFFFFFFFFL,
                                -2L,
                                TxnRef.BROKER_SCOPE));
        assertThatThrownBy(() -> s.deserialize(4, bytes)).hasMessageContaining("version 4");
    }

    @Test
    void writerStateRoundTripsKeepsItsV3BytesAndRestoresV2AndV1AsBrokerParts() throws IOException {
        NearstreamWriterStateSerializer s = new NearstreamWriterStateSerializer();
        assertThat(s.getVersion()).isEqualTo(3);
        NearstreamWriterState state = new NearstreamWriterState("t-0", true, Map.of(2, 9L, 0, 7L));
        byte[] bytes = s.serialize(state);
        assertThat(HexFormat.of().formatHex(bytes)).isEqualTo(STATE_V3_HEX);
        assertThat(s.deserialize(3, bytes)).isEqualTo(state);
        NearstreamWriterState brokers = new NearstreamWriterState("t-0", Map.of(4, 9L, 1, 7L));
        assertThat(s.deserialize(3, s.serialize(brokers))).isEqualTo(brokers);
        NearstreamWriterState unicode = new NearstreamWriterState("jöb-4-3", Map.of());
        assertThat(s.deserialize(3, s.serialize(unicode))).isEqualTo(unicode);

        NearstreamWriterState v2 = s.deserialize(2, HexFormat.of().parseHex(STATE_V2_HEX));
        assertThat(v2).isEqualTo(brokers);
        assertThat(v2.streamletScopes()).isFalse();

        assertThat(s.deserialize(1, HexFormat.of().parseHex(STATE_V1_HEX)))
                .isEqualTo(new NearstreamWriterState("t-0", Map.of(BrokerTxnRef.ONLY_BROKER, 7L)));
        assertThat(s.deserialize(1, HexFormat.of().parseHex("0003742d300000000000000000")))
                .as("serial 0: nothing prepared")
                .isEqualTo(new NearstreamWriterState("t-0", Map.of()));
        assertThatThrownBy(() -> s.deserialize(0, bytes)).isInstanceOf(IOException.class);
    }
}
