package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.ProtocolCodec.AppendEntry;
import io.nearstream.client.ProtocolCodec.AppendRequest;
import io.nearstream.client.ProtocolCodec.DescribeStreamRequest;
import io.nearstream.client.ProtocolCodec.ResponseFrame;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** Malformed input: every decoder refuses it with {@link NearstreamProtocolException}, only. */
class ProtocolCodecTest {

    private static final UnpooledByteBufAllocator ALLOC = UnpooledByteBufAllocator.DEFAULT;

    private static List<Path> frames(String suffix) throws IOException {
        try (Stream<Path> s = Files.list(ProtocolGoldenTest.protocolDir())) {
            List<Path> out = new ArrayList<>();
            s.filter(p -> p.getFileName().toString().endsWith(suffix)).sorted().forEach(out::add);
            return out;
        }
    }

    /** Decodes a response frame fully, as the client would (chunks of fetches included). */
    static void decodeResponseFully(byte[] frame) {
        ResponseFrame r = ProtocolCodec.decodeResponse(Unpooled.wrappedBuffer(frame));
        if (!r.ok()) {
            return;
        }
        ByteBuf body = r.body();
        Opcode op = r.header().knownOpcode();
        if (op == null) {
            throw NearstreamProtocolException.malformed("unknown opcode");
        }
        switch (op) {
            case HANDSHAKE:
                ProtocolCodec.decodeHandshakeResponse(body);
                break;
            case CREATE_STREAM:
            case DELETE_STREAM:
                ProtocolCodec.decodeEmpty(body, "empty");
                break;
            case DESCRIBE_STREAM:
                ProtocolCodec.decodeDescribeStreamResponse(body);
                break;
            case LIST_STREAMS:
                ProtocolCodec.decodeListStreamsResponse(body);
                break;
            case METADATA:
                ProtocolCodec.decodeMetadataResponse(body);
                break;
            case APPEND:
                ProtocolCodec.decodeAppendResponse(body);
                break;
            case FETCH:
                for (StreamletFetch f : ProtocolCodec.decodeFetchResponse(body)) {
                    for (ChunkBlock b : f.blocks()) {
                        ChunkCursor c = new ChunkCursor(b);
                        while (c.nextChunk()) {
                            while (c.nextRecord()) {
                                c.copyRecord();
                            }
                        }
                    }
                }
                break;
            case STATS:
                ProtocolCodec.decodeStatsResponse(body);
                break;
            case LOOKUP_TIMESTAMP:
                ProtocolCodec.decodeLookupTimestampResponse(body);
                break;
            case CLUSTER_METADATA:
                ProtocolCodec.decodeClusterMetadataResponse(body);
                break;
            case MOVE_STREAMLET:
                ProtocolCodec.decodeEmpty(body, "empty");
                break;
            case SEAL_STREAMLET:
                ProtocolCodec.decodeSealStreamletResponse(body);
                break;
            case PUSH_SUBSCRIBE:
                ProtocolCodec.decodePushSubscribeResponse(body);
                break;
            case PUSH_UPDATE:
            case PUSH_CLOSE:
            case TXN_PREPARE:
            case TXN_COMMIT:
            case TXN_ABORT:
                ProtocolCodec.decodeEmpty(body, "empty");
                break;
            case TXN_INIT:
                ProtocolCodec.decodeTxnInitResponse(body);
                break;
            case TXN_BEGIN:
                ProtocolCodec.decodeTxnBeginResponse(body);
                break;
            case TXN_APPEND:
                ProtocolCodec.decodeAppendResponse(body, "TxnAppend response");
                break;
            case TXN_LIST:
                ProtocolCodec.decodeTxnListResponse(body);
                break;
            default:
                throw new AssertionError(op);
        }
    }

    static void decodeRequestFully(byte[] frame) {
        ProtocolTestCodec.DecodedRequest d =
                ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(frame));
        List<AppendEntry> entries = List.of();
        if (d.request() instanceof AppendRequest a) {
            entries = a.entries();
        } else if (d.request() instanceof ProtocolCodec.TxnAppendRequest a) {
            entries = a.entries();
        }
        for (AppendEntry e : entries) {
            Chunks.validate(ByteBufUtil.getBytes(e.chunk()));
        }
    }

    /** Cuts the frame to {@code size} bytes and fixes its length prefix, so the body is short. */
    private static byte[] truncated(byte[] frame, int size) {
        byte[] t = java.util.Arrays.copyOf(frame, size);
        if (size >= 4) {
            int length = size - 4;
            t[0] = (byte) length;
            t[1] = (byte) (length >>> 8);
            t[2] = (byte) (length >>> 16);
            t[3] = (byte) (length >>> 24);
        }
        return t;
    }

    @Test
    void everyTruncationOfEveryResponseIsRefused() throws IOException {
        for (Path p : frames("_response.bin")) {
            byte[] frame = Files.readAllBytes(p);
            for (int size = 0; size < frame.length; size++) {
                byte[] t = truncated(frame, size);
                assertThatThrownBy(() -> decodeResponseFully(t))
                        .as("%s cut to %s bytes", p.getFileName(), size)
                        .isInstanceOf(NearstreamProtocolException.class);
            }
            // The uncut frame with a wrong length prefix is refused too.
            byte[] wrong = frame.clone();
            wrong[0]++;
            assertThatThrownBy(() -> decodeResponseFully(wrong))
                    .isInstanceOf(NearstreamProtocolException.class)
                    .hasMessageContaining("length");
        }
    }

    @Test
    void everyTruncationOfEveryRequestIsRefused() throws IOException {
        for (Path p : frames("_request.bin")) {
            byte[] frame = Files.readAllBytes(p);
            int min = frame.length == 16 ? frame.length : 0; // empty bodies cannot be cut
            for (int size = 0; size < frame.length && min == 0; size++) {
                byte[] t = truncated(frame, size);
                assertThatThrownBy(() -> decodeRequestFully(t))
                        .as("%s cut to %s bytes", p.getFileName(), size)
                        .isInstanceOf(NearstreamProtocolException.class);
            }
        }
    }

    @Test
    void trailingBytesAreRefused() throws IOException {
        for (Path p : frames(".bin")) {
            if (p.getFileName().toString().equals("chunk.bin")) {
                continue;
            }
            byte[] frame = Files.readAllBytes(p);
            byte[] longer =
                    truncated(java.util.Arrays.copyOf(frame, frame.length + 1), frame.length + 1);
            boolean response = (frame[5] & 1) != 0;
            // A non-OK response has no body at all: any byte after its message is refused as one.
            boolean error = response && (frame[16] != 0 || frame[17] != 0);
            assertThatThrownBy(
                            () -> {
                                if (response) {
                                    decodeResponseFully(longer);
                                } else {
                                    decodeRequestFully(longer);
                                }
                            })
                    .as(p.getFileName().toString())
                    .isInstanceOf(NearstreamProtocolException.class)
                    .hasMessageContaining(error ? "body bytes" : "trailing");
        }
    }

    @Test
    void randomCorruptionNeverLeaksAnotherException() throws IOException {
        Random random = new Random(42);
        for (Path p : frames(".bin")) {
            if (p.getFileName().toString().equals("chunk.bin")) {
                continue;
            }
            byte[] frame = Files.readAllBytes(p);
            boolean response = (frame[5] & 1) != 0;
            for (int round = 0; round < 2_000; round++) {
                byte[] bad = frame.clone();
                int flips = 1 + random.nextInt(4);
                for (int i = 0; i < flips; i++) {
                    // Keep the length prefix mostly intact so the body decoders get exercised.
                    int at = 4 + random.nextInt(bad.length - 4);
                    bad[at] = (byte) random.nextInt(256);
                }
                try {
                    if (response) {
                        decodeResponseFully(bad);
                    } else {
                        decodeRequestFully(bad);
                    }
                } catch (NearstreamProtocolException expected) {
                    // refused cleanly
                }
            }
        }
    }

    @Test
    void hugeCountInShortBodyIsRefusedBeforeAllocating() {
        ByteBuf body = Unpooled.buffer().writeIntLE(0xFFFFFFFF).writeZero(6);
        assertThatThrownBy(() -> ProtocolCodec.decodeMetadataResponse(body))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("4294967295");
        ByteBuf blob =
                Unpooled.buffer()
                        .writeIntLE(1)
                        .writeIntLE(0)
                        .writeShortLE(0)
                        .writeShortLE(0)
                        .writeZero(40)
                        .writeIntLE(1)
                        .writeZero(20)
                        .writeIntLE(-2);
        assertThatThrownBy(() -> ProtocolCodec.decodeFetchResponse(blob))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("runs past the end");
    }

    @Test
    void badBoolAndDurabilityAreMalformed() {
        ByteBuf append =
                Unpooled.buffer()
                        .writeIntLE(1)
                        .writeIntLE(0)
                        .writeShortLE(0)
                        .writeShortLE(0)
                        .writeZero(20)
                        .writeByte(2);
        assertThatThrownBy(() -> ProtocolCodec.decodeAppendResponse(append))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("duplicate");
        ByteBuf config = Unpooled.buffer();
        ProtocolCodec.writeStreamConfig(config, StreamConfig.of("s", 1));
        config.setByte(2 + 1 + 16, 3);
        assertThatThrownBy(() -> ProtocolCodec.decodeDescribeStreamResponse(config))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("durability 3");
    }

    @Test
    void invalidUtf8IsReplacedNotRefused() {
        ByteBuf body =
                Unpooled.buffer().writeIntLE(1).writeShortLE(2).writeByte(0xC3).writeByte(0x28);
        assertThat(ProtocolCodec.decodeListStreamsResponse(body)).containsExactly("\uFFFD(");
    }

    @Test
    void nonOkResponseMustNotCarryABody() {
        ByteBuf frame =
                ProtocolTestCodec.encodeResponse(
                        ALLOC, 4, 9, StatusCode.STREAM_NOT_FOUND.code(), "gone", null);
        frame.writeByte(0);
        frame.setIntLE(0, frame.readableBytes() - 4);
        assertThatThrownBy(() -> ProtocolCodec.decodeResponse(frame))
                .isInstanceOf(NearstreamProtocolException.class);
    }

    @Test
    void requestWhereResponseExpectedAndViceVersa() {
        ByteBuf request = ProtocolCodec.encodeRequest(ALLOC, 5, new DescribeStreamRequest("s"));
        assertThatThrownBy(() -> ProtocolCodec.decodeResponse(request.duplicate()))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("request frame");
        ByteBuf response = ProtocolTestCodec.encodeResponse(ALLOC, 4, 5, 0, "", b -> {});
        assertThatThrownBy(() -> ProtocolTestCodec.decodeRequest(response))
                .isInstanceOf(NearstreamProtocolException.class);
        request.setShortLE(6, 99);
        assertThatThrownBy(() -> ProtocolTestCodec.decodeRequest(request))
                .isInstanceOf(NearstreamProtocolException.class)
                .satisfies(
                        e ->
                                assertThat(((NearstreamProtocolException) e).status())
                                        .isEqualTo(StatusCode.UNKNOWN_OPCODE));
    }

    @Test
    void encoderRefusesOverlongStrings() {
        assertThatThrownBy(
                        () ->
                                ProtocolCodec.encodeRequest(
                                        ALLOC, 1, new DescribeStreamRequest("é".repeat(40_000))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("80000");
    }

    @Test
    void appendFramesShareTheChunkArrays() {
        byte[] a = new ChunkBuilder().add(new byte[] {1, 2, 3}).build(7, 0, 0);
        byte[] b = new ChunkBuilder().add(new byte[1000]).build(7, 0, 0);
        ByteBuf frame =
                ProtocolCodec.encodeRequest(
                        ALLOC,
                        3,
                        new AppendRequest(
                                "s",
                                List.of(
                                        new AppendEntry(0, Unpooled.wrappedBuffer(a)),
                                        new AppendEntry(1, Unpooled.wrappedBuffer(b)))));
        try {
            assertThat(frame).isInstanceOf(CompositeByteBuf.class);
            CompositeByteBuf composite = (CompositeByteBuf) frame;
            List<byte[]> arrays = new ArrayList<>();
            for (ByteBuf component : composite) {
                if (component.hasArray()) {
                    arrays.add(component.array());
                }
            }
            assertThat(arrays).anyMatch(x -> x == a).anyMatch(x -> x == b);
            assertThat(frame.getIntLE(0)).isEqualTo(frame.readableBytes() - 4);
            decodeRequestFully(ByteBufUtil.getBytes(frame));
        } finally {
            frame.release();
        }
    }
}
