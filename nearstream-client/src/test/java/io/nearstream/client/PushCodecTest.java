package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.ProtocolCodec.PushCloseRequest;
import io.nearstream.client.ProtocolCodec.PushSubscribeRequest;
import io.nearstream.client.ProtocolCodec.PushUpdateRequest;
import io.nearstream.client.ProtocolCodec.Request;
import io.nearstream.client.ProtocolCodec.ResponseFrame;
import io.nearstream.client.ProtocolTestCodec.DecodedRequest;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The push opcodes (20-22), byte by byte against a hand-written frame, and round trips. The golden
 * vectors push_*.bin, once generated, are checked by {@link ProtocolGoldenTest} as well.
 */
class PushCodecTest {

    private static final UnpooledByteBufAllocator ALLOC = UnpooledByteBufAllocator.DEFAULT;

    private static final List<PushRingSpec> RINGS =
            List.of(
                    new PushRingSpec(
                            0,
                            List.of(
                                    new PushSplitStart(0, Position.EARLIEST),
                                    new PushSplitStart(2, new Position(1, 3, 128)))),
                    new PushRingSpec(5, List.of()));

    @Test
    void pushSubscribeRequestLayout() {
        byte[] bytes =
                encode(new PushSubscribeRequest("s", 8, 1 << 20, 5000, RINGS), 0x0102030405060708L);
        ByteBuf expected = Unpooled.buffer().writeIntLE(0); // length, patched below
        expected.writeByte(1).writeByte(0).writeShortLE(20).writeLongLE(0x0102030405060708L);
        expected.writeShortLE(1).writeByte('s');
        expected.writeIntLE(8).writeIntLE(1 << 20).writeIntLE(5000).writeIntLE(2);
        expected.writeIntLE(0).writeIntLE(2);
        expected.writeIntLE(0).writeLongLE(0).writeLongLE(0).writeIntLE(0);
        expected.writeIntLE(2).writeLongLE(1).writeLongLE(3).writeIntLE(128);
        expected.writeIntLE(5).writeIntLE(0);
        expected.writeByte(0); // no record filter
        expected.writeByte(0); // binary slots
        expected.setIntLE(0, expected.readableBytes() - 4);
        assertThat(bytes).isEqualTo(ByteBufUtil.getBytes(expected));
    }

    @Test
    void aReplicaReadSetsFlag0x04AndChangesNothingElse() {
        byte[] leaderOnly =
                encode(
                        new PushSubscribeRequest(
                                "s",
                                8,
                                1 << 20,
                                5000,
                                RINGS,
                                RecordFilter.none(),
                                SlotFormat.BINARY,
                                false),
                        7);
        byte[] replicaRead =
                encode(
                        new PushSubscribeRequest(
                                "s",
                                8,
                                1 << 20,
                                5000,
                                RINGS,
                                RecordFilter.none(),
                                SlotFormat.BINARY,
                                true),
                        7);
        int flags = 4 + 1; // after the length prefix and the version
        assertThat(leaderOnly[flags]).isZero();
        assertThat(replicaRead[flags]).isEqualTo((byte) 0x04);
        replicaRead[flags] = 0;
        assertThat(replicaRead).isEqualTo(leaderOnly);
    }

    @Test
    void pushSubscribeRequestCarriesItsFilter() {
        RecordFilter json = RecordFilter.jsonFieldIn("t", "a", "");
        byte[] bytes = encode(new PushSubscribeRequest("s", 8, 1 << 20, 5000, RINGS, json), 1);
        ByteBuf tail = Unpooled.buffer();
        tail.writeByte(1).writeShortLE(1).writeByte('t').writeIntLE(2);
        tail.writeShortLE(1).writeByte('a').writeShortLE(0);
        tail.writeByte(0); // binary slots
        assertThat(Arrays.copyOfRange(bytes, bytes.length - tail.readableBytes(), bytes.length))
                .isEqualTo(ByteBufUtil.getBytes(tail));

        byte[] needle = {0, (byte) 0xFF};
        bytes =
                encode(
                        new PushSubscribeRequest(
                                "s", 8, 1 << 20, 5000, RINGS, RecordFilter.bytesContain(needle)),
                        1);
        assertThat(Arrays.copyOfRange(bytes, bytes.length - 8, bytes.length))
                .containsExactly(2, 2, 0, 0, 0, 0, 0xFF, 0);
    }

    @Test
    void pushSubscribeRequestEndsWithItsSlotFormat() {
        RecordFilter needle = RecordFilter.bytesContain(new byte[] {7});
        byte[] binary = encode(new PushSubscribeRequest("s", 8, 1 << 20, 5000, RINGS, needle), 1);
        byte[] view =
                encode(
                        new PushSubscribeRequest(
                                "s", 8, 1 << 20, 5000, RINGS, needle, SlotFormat.BINARY_VIEW),
                        1);
        assertThat(view).hasSameSizeAs(binary);
        assertThat(binary[binary.length - 1]).isEqualTo((byte) 0);
        assertThat(view[view.length - 1]).isEqualTo((byte) 1);
        assertThat(Arrays.copyOf(view, view.length - 1))
                .isEqualTo(Arrays.copyOf(binary, binary.length - 1));
    }

    @Test
    void slotFormatsParseFromConfigurationText() {
        assertThat(SlotFormat.parse("binary")).isEqualTo(SlotFormat.BINARY);
        assertThat(SlotFormat.parse(" Binary-View ")).isEqualTo(SlotFormat.BINARY_VIEW);
        assertThat(SlotFormat.fromCode(1)).isEqualTo(SlotFormat.BINARY_VIEW);
        for (SlotFormat f : SlotFormat.values()) {
            assertThat(SlotFormat.parse(f.configText())).isEqualTo(f);
            assertThat(SlotFormat.fromCode(f.code)).isEqualTo(f);
        }
        assertThatThrownBy(() -> SlotFormat.parse("binary_view"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("binary-view");
        assertThatThrownBy(() -> SlotFormat.fromCode(2))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void requestsRoundTrip() {
        for (Request r :
                List.<Request>of(
                        new PushSubscribeRequest("stream", 8, 1 << 20, 5000, RINGS),
                        new PushSubscribeRequest(
                                "stream",
                                8,
                                1 << 20,
                                5000,
                                RINGS,
                                RecordFilter.jsonFieldIn("event_type", "view", "click")),
                        new PushSubscribeRequest(
                                "stream",
                                8,
                                1 << 20,
                                5000,
                                RINGS,
                                RecordFilter.none(),
                                SlotFormat.BINARY_VIEW),
                        new PushSubscribeRequest(
                                "stream",
                                8,
                                1 << 20,
                                5000,
                                RINGS,
                                RecordFilter.none(),
                                SlotFormat.BINARY,
                                true),
                        new PushUpdateRequest(-2L, RINGS),
                        new PushUpdateRequest(3, List.of()),
                        new PushCloseRequest(42))) {
            DecodedRequest d =
                    ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(encode(r, 9)));
            assertThat(d.request()).isEqualTo(r);
            assertThat(d.header().opcode()).isEqualTo(r.opcode().code());
        }
        assertThat(Opcode.fromCode(20)).isEqualTo(Opcode.PUSH_SUBSCRIBE);
        assertThat(Opcode.fromCode(21)).isEqualTo(Opcode.PUSH_UPDATE);
        assertThat(Opcode.fromCode(22)).isEqualTo(Opcode.PUSH_CLOSE);
    }

    @Test
    void pushSubscribeResponseRoundTrips() {
        PushSubscription s = new PushSubscription(-1L, 77, "/dev/shm/nearstream-push-1", 9 << 20);
        ByteBuf frame =
                ProtocolTestCodec.encodeResponse(
                        ALLOC,
                        Opcode.PUSH_SUBSCRIBE.code(),
                        5,
                        0,
                        "",
                        out -> ProtocolTestCodec.writePushSubscribeResponse(out, s));
        ResponseFrame r = ProtocolCodec.decodeResponse(frame);
        assertThat(ProtocolCodec.decodePushSubscribeResponse(r.body())).isEqualTo(s);
        frame.release();
    }

    @Test
    void truncatedRingListIsRefused() {
        byte[] bytes = encode(new PushUpdateRequest(1, RINGS), 1);
        ByteBuf cut = Unpooled.wrappedBuffer(bytes, 0, bytes.length - 4);
        cut.setIntLE(0, cut.readableBytes() - 4);
        assertThatThrownBy(() -> ProtocolTestCodec.decodeRequest(cut))
                .isInstanceOf(NearstreamProtocolException.class);
    }

    /** The bytes of a request frame, as the client would send it. */
    static byte[] encode(Request r, long requestId) {
        ByteBuf b = ProtocolCodec.encodeRequest(ALLOC, requestId, r);
        try {
            return ByteBufUtil.getBytes(b);
        } finally {
            b.release();
        }
    }
}
