package io.nearstream.flink.source.split;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.Position;
import java.io.IOException;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/** Split serialization: round trips and the checked-in version 1 bytes. */
class NearstreamSplitSerializerTest {

    private final NearstreamSplitSerializer serializer = NearstreamSplitSerializer.INSTANCE;

    /**
     * Version 1 bytes of {@code NearstreamSplit("clicks", 3, 2:5:4096, skip 7, stop 3:9:128)}: UTF
     * name, streamlet, start (group, segment, offset), skip, has-stop, stop. Never change them: a
     * failing test means old checkpoints no longer restore.
     */
    static final String SPLIT_V1_HEX =
            "0006636c69636b73" // "clicks"
                    + "00000003" // streamlet 3
                    + "0000000000000002"
                    + "0000000000000005"
                    + "00001000" // start 2:5:4096
                    + "00000007" // records to skip
                    + "01" // has stopping position
                    + "0000000000000003"
                    + "0000000000000009"
                    + "00000080"; // stop 3:9:128

    static final NearstreamSplit SPLIT_V1 =
            new NearstreamSplit("clicks", 3, new Position(2, 5, 4096), 7, new Position(3, 9, 128));

    @Test
    void roundTripsSplitsWithAndWithoutStop() throws IOException {
        NearstreamSplit[] splits = {
            new NearstreamSplit("s", 0, Position.EARLIEST, 0, null),
            new NearstreamSplit("s.é-ü_1", 65535, new Position(-1L, -2L, -3), 12, null),
            SPLIT_V1,
        };
        for (NearstreamSplit split : splits) {
            byte[] bytes = serializer.serialize(split);
            NearstreamSplit back = serializer.deserialize(serializer.getVersion(), bytes);
            assertThat(back).isEqualTo(split);
            assertThat(back.splitId()).isEqualTo(split.splitId());
        }
    }

    @Test
    void deserializesVersion1Bytes() throws IOException {
        byte[] v1 = HexFormat.of().parseHex(SPLIT_V1_HEX);

        assertThat(serializer.deserialize(1, v1)).isEqualTo(SPLIT_V1);
        assertThat(serializer.getVersion()).isEqualTo(1);
        assertThat(serializer.serialize(SPLIT_V1)).isEqualTo(v1);
    }

    @Test
    void rejectsUnknownVersionsAndTrailingBytes() throws IOException {
        byte[] bytes = serializer.serialize(SPLIT_V1);
        assertThatThrownBy(() -> serializer.deserialize(2, bytes))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("version 2");

        byte[] longer = java.util.Arrays.copyOf(bytes, bytes.length + 1);
        assertThatThrownBy(() -> serializer.deserialize(1, longer))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("Trailing 1 bytes");
    }

    @Test
    void splitIdNamesStreamAndStreamlet() {
        assertThat(SPLIT_V1.splitId()).isEqualTo("clicks-3");
        assertThat(SPLIT_V1.toString()).contains("clicks-3", "2:5:4096+7", "stop=3:9:128");
    }
}
