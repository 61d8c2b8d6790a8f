package io.nearstream.client;

import static io.nearstream.client.PushCodecTest.encode;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.ProtocolCodec.AppendEntry;
import io.nearstream.client.ProtocolCodec.Request;
import io.nearstream.client.ProtocolCodec.ResponseFrame;
import io.nearstream.client.ProtocolCodec.TxnAppendRequest;
import io.nearstream.client.ProtocolCodec.TxnInitRequest;
import io.nearstream.client.ProtocolCodec.TxnListRequest;
import io.nearstream.client.ProtocolCodec.TxnRefRequest;
import io.nearstream.client.ProtocolTestCodec.DecodedRequest;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * The transaction opcodes (30-36), byte by byte against hand-written frames laid out as
 * docs/protocol.md's tables say, and round trips through both halves of the codec. The golden
 * vectors txn_*.bin are checked by {@link ProtocolGoldenTest} as well.
 */
class TxnCodecTest {

    private static final UnpooledByteBufAllocator ALLOC = UnpooledByteBufAllocator.DEFAULT;

    /**
     * An epoch above 2^31, a serial above 2^63 and a streamlet scope above 2^31: all are unsigned
     * on the wire.
     */
    private static final TxnRef REF = new TxnRef("s", "tx-é", 0xF0000001L, -2L, 0x80000003);

    @Test
    void txnInitRequestLayout() {
        byte[] bytes =
                encode(new TxnInitRequest("s", "t", 7, TxnRef.BROKER_SCOPE), 0x0102030405060708L);
        ByteBuf expected = requestHeader(30, 0x0102030405060708L);
        expected.writeShortLE(1).writeByte('s');
        expected.writeShortLE(1).writeByte('t');
        expected.writeLongLE(7);
        expected.writeIntLE(0xFFFFFFFF);
        assertThat(bytes).isEqualTo(finish(expected));
    }

    @Test
    void txnRefRequestLayout() {
        for (Opcode op :
                List.of(
                        Opcode.TXN_BEGIN,
                        Opcode.TXN_PREPARE,
                        Opcode.TXN_COMMIT,
                        Opcode.TXN_ABORT)) {
            byte[] bytes = encode(new TxnRefRequest(op, REF), 3);
            ByteBuf expected = requestHeader(op.code(), 3);
            expected.writeShortLE(1).writeByte('s');
            // "tx-é": the Str length counts UTF-8 bytes (5), not characters (4).
            expected.writeShortLE(5)
                    .writeBytes(new byte[] {'t', 'x', '-', (byte) 0xC3, (byte) 0xA9});
            expected.writeIntLE(0xF0000001).writeLongLE(-2L).writeIntLE(0x80000003);
            assertThat(bytes).as(op.wireName()).isEqualTo(finish(expected));
        }
    }

    @Test
    void txnAppendRequestLayout() {
        byte[] chunk = new ChunkBuilder().add(new byte[] {1, 2}).build(9, 4, 100);
        TxnRef ref = new TxnRef("s", "t", 2, 5, 3);
        byte[] bytes =
                encode(
                        new TxnAppendRequest(
                                ref, List.of(new AppendEntry(3, Unpooled.wrappedBuffer(chunk)))),
                        11);
        ByteBuf expected = requestHeader(32, 11);
        expected.writeShortLE(1).writeByte('s');
        expected.writeShortLE(1).writeByte('t');
        expected.writeIntLE(2).writeLongLE(5).writeIntLE(3);
        expected.writeIntLE(1).writeIntLE(3).writeIntLE(chunk.length).writeBytes(chunk);
        assertThat(bytes).isEqualTo(finish(expected));
    }

    @Test
    void txnListRequestLayout() {
        byte[] bytes = encode(new TxnListRequest("s", "p-", 258), 12);
        ByteBuf expected = requestHeader(36, 12);
        expected.writeShortLE(1).writeByte('s');
        expected.writeShortLE(2).writeByte('p').writeByte('-');
        expected.writeIntLE(258);
        assertThat(bytes).isEqualTo(finish(expected));
    }

    @Test
    void existingCallersStayInTheBrokerScope() {
        assertThat(TxnRef.BROKER_SCOPE).isEqualTo(0xFFFFFFFF);
        TxnRef ref = new TxnRef("s", "t", 2, 5);
        assertThat(ref.scope()).isEqualTo(TxnRef.BROKER_SCOPE);
        assertThat(ref.withSerial(6).scope()).isEqualTo(TxnRef.BROKER_SCOPE);
        assertThat(REF.withSerial(0).scope()).isEqualTo(0x80000003);
        assertThat(ref).hasToString("s/t epoch 2 serial 5");
        assertThat(REF)
                .hasToString(
                        "s/tx-é epoch 4026531841 serial 18446744073709551614 scope 2147483651");
        TransactionInfo info =
                new TransactionInfo("t", 2, 5, TransactionInfo.State.PREPARED, 0, 0, 0, 0L, 7);
        assertThat(info.ref("s")).isEqualTo(new TxnRef("s", "t", 2, 5, 7));
    }

    @Test
    void requestsRoundTrip() {
        for (Request r :
                List.<Request>of(
                        new TxnInitRequest("stream", "id", -1L, TxnRef.BROKER_SCOPE),
                        new TxnInitRequest("stream", "id", 0, 0x80000000),
                        new TxnRefRequest(Opcode.TXN_BEGIN, REF.withSerial(0)),
                        new TxnRefRequest(Opcode.TXN_PREPARE, REF),
                        new TxnRefRequest(Opcode.TXN_COMMIT, REF),
                        new TxnRefRequest(Opcode.TXN_ABORT, REF),
                        new TxnRefRequest(Opcode.TXN_ABORT, new TxnRef("s", "t", 1, 1)),
                        new TxnListRequest("stream", "", TxnRef.BROKER_SCOPE),
                        new TxnListRequest("stream", "job-", 0))) {
            DecodedRequest d =
                    ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(encode(r, 9)));
            assertThat(d.request()).isEqualTo(r);
            assertThat(d.header().opcode()).isEqualTo(r.opcode().code());
        }
        for (int code = 30; code <= 36; code++) {
            assertThat(Opcode.fromCode(code)).as("opcode %s", code).isNotNull();
        }
        assertThat(Opcode.fromCode(37)).isNull();
    }

    @Test
    void txnAppendRoundTripsWithItsChunks() {
        byte[] a = new ChunkBuilder().add(new byte[] {7}).build(1, 0, 5);
        byte[] b = new ChunkBuilder().add(new byte[0]).build(1, 1, 6);
        byte[] bytes =
                encode(
                        new TxnAppendRequest(
                                REF,
                                List.of(
                                        new AppendEntry(0, Unpooled.wrappedBuffer(a)),
                                        new AppendEntry(258, Unpooled.wrappedBuffer(b)))),
                        4);
        TxnAppendRequest d =
                (TxnAppendRequest)
                        ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(bytes)).request();
        assertThat(d.ref()).isEqualTo(REF);
        assertThat(d.entries()).extracting(AppendEntry::streamlet).containsExactly(0, 258);
        assertThat(ByteBufUtil.getBytes(d.entries().get(0).chunk())).isEqualTo(a);
        assertThat(ByteBufUtil.getBytes(d.entries().get(1).chunk())).isEqualTo(b);
    }

    @Test
    void txnInitResponseRoundTrips() {
        TxnInitResult v = new TxnInitResult(0xFFFFFFFFL, -5L);
        ResponseFrame r =
                response(Opcode.TXN_INIT, out -> ProtocolTestCodec.writeTxnInitResponse(out, v));
        assertThat(r.body().readableBytes()).isEqualTo(12);
        assertThat(ProtocolCodec.decodeTxnInitResponse(r.body())).isEqualTo(v);
    }

    @Test
    void txnBeginResponseRoundTrips() {
        ResponseFrame r =
                response(
                        Opcode.TXN_BEGIN, out -> ProtocolTestCodec.writeTxnBeginResponse(out, -3L));
        assertThat(ProtocolCodec.decodeTxnBeginResponse(r.body())).isEqualTo(-3L);
    }

    @Test
    void txnListResponseRoundTrips() {
        List<TransactionInfo> v =
                List.of(
                        new TransactionInfo(
                                "a",
                                1,
                                1,
                                TransactionInfo.State.OPEN,
                                0,
                                0,
                                0,
                                -1L,
                                TxnRef.BROKER_SCOPE),
                        new TransactionInfo(
                                "a",
                                0x80000000L,
                                -1L,
                                TransactionInfo.State.PREPARED,
                                1L << 40,
                                -1,
                                65536,
                                1_700_000_000_000L,
                                0x80000000));
        ResponseFrame r =
                response(Opcode.TXN_LIST, out -> ProtocolTestCodec.writeTxnListResponse(out, v));
        assertThat(r.body().readableBytes()).isEqualTo(4 + 2 * (43 + 1));
        assertThat(ProtocolCodec.decodeTxnListResponse(r.body())).isEqualTo(v);
    }

    @Test
    void unknownTransactionStateIsMalformed() {
        ByteBuf body = Unpooled.buffer().writeIntLE(1);
        body.writeShortLE(1).writeByte('a').writeIntLE(1).writeLongLE(1).writeByte(3);
        body.writeLongLE(0).writeIntLE(0).writeIntLE(0).writeLongLE(0).writeIntLE(-1);
        assertThatThrownBy(() -> ProtocolCodec.decodeTxnListResponse(body))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("state 3");
    }

    @Test
    void aTxnRefRequestNeedsATxnRefOpcode() {
        assertThatThrownBy(() -> new TxnRefRequest(Opcode.TXN_INIT, REF))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new TxnRef("s", "t", 1L << 32, 1))
                .isInstanceOf(IllegalArgumentException.class);
    }

    private static ResponseFrame response(Opcode op, Consumer<ByteBuf> body) {
        ByteBuf frame = ProtocolTestCodec.encodeResponse(ALLOC, op.code(), 5, 0, "", body);
        // A copy: the frame is released here, the body is read after.
        ResponseFrame r =
                ProtocolCodec.decodeResponse(Unpooled.wrappedBuffer(ByteBufUtil.getBytes(frame)));
        frame.release();
        assertThat(r.header().opcode()).isEqualTo(op.code());
        return r;
    }

    private static ByteBuf requestHeader(int opcode, long requestId) {
        ByteBuf b = Unpooled.buffer().writeIntLE(0); // length, patched by finish()
        return b.writeByte(1).writeByte(0).writeShortLE(opcode).writeLongLE(requestId);
    }

    private static byte[] finish(ByteBuf expected) {
        expected.setIntLE(0, expected.readableBytes() - 4);
        return ByteBufUtil.getBytes(expected);
    }
}
