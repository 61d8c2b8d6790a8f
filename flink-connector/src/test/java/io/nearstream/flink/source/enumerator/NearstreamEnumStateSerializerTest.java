package io.nearstream.flink.source.enumerator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.Position;
import io.nearstream.flink.source.split.NearstreamSplit;
import java.io.IOException;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Enumerator state serialization: round trips and the checked-in version 1 bytes. */
class NearstreamEnumStateSerializerTest {

    private final NearstreamEnumStateSerializer serializer = new NearstreamEnumStateSerializer();

    /**
     * Version 1 bytes of a state with one assigned split ("s", 0, earliest, no stop), one
     * unassigned split ("s", 1, 1:1:48, stop 1:2:0) and the initial discovery finished. Never
     * change them: a failing test means old checkpoints no longer restore.
     */
    static final String STATE_V1_HEX =
            "01" // initial discovery finished
                    + "00000001" // one assigned split
                    + "000173"
                    + "00000000" // "s", streamlet 0
                    + "0000000000000000"
                    + "0000000000000000"
                    + "00000000" // earliest
                    + "00000000"
                    + "00" // skip 0, no stop
                    + "00000001" // one unassigned split
                    + "000173"
                    + "00000001" // "s", streamlet 1
                    + "0000000000000001"
                    + "0000000000000001"
                    + "00000030" // 1:1:48
                    + "00000000"
                    + "01" // skip 0, stop:
                    + "0000000000000001"
                    + "0000000000000002"
                    + "00000000"; // 1:2:0

    static final NearstreamEnumState STATE_V1 =
            new NearstreamEnumState(
                    List.of(new NearstreamSplit("s", 0, Position.EARLIEST, 0, null)),
                    List.of(
                            new NearstreamSplit(
                                    "s", 1, new Position(1, 1, 48), 0, new Position(1, 2, 0))),
                    true);

    @Test
    void roundTrips() throws IOException {
        for (NearstreamEnumState state : List.of(NearstreamEnumState.initial(), STATE_V1)) {
            byte[] bytes = serializer.serialize(state);
            assertThat(serializer.deserialize(serializer.getVersion(), bytes)).isEqualTo(state);
        }
    }

    @Test
    void deserializesVersion1Bytes() throws IOException {
        byte[] v1 = HexFormat.of().parseHex(STATE_V1_HEX);

        assertThat(serializer.deserialize(1, v1)).isEqualTo(STATE_V1);
        assertThat(serializer.getVersion()).isEqualTo(1);
        assertThat(serializer.serialize(STATE_V1)).isEqualTo(v1);
    }

    @Test
    void rejectsUnknownVersions() {
        assertThatThrownBy(() -> serializer.deserialize(7, new byte[] {1}))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("version 7");
    }
}
