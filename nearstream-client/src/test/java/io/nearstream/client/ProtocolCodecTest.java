package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.ProtocolCodec.AppendEntry;
import io.nearstream.client.ProtocolCodec.AppendRequest;
import io.nearstream.client.ProtocolCodec.CreateStreamRequest;
import io.nearstream.client.ProtocolCodec.DescribeStreamRequest;
import io.nearstream.client.ProtocolCodec.ReplicaAppendRequest;
import io.nearstream.client.ProtocolCodec.ReplicaCheckRequest;
import io.nearstream.client.ProtocolCodec.ReplicaCheckResponse;
import io.nearstream.client.ProtocolCodec.ReplicaJoinRequest;
import io.nearstream.client.ProtocolCodec.ReplicaMoveRequest;
import io.nearstream.client.ProtocolCodec.ReplicaPublishedRequest;
import io.nearstream.client.ProtocolCodec.ReplicaTxnFilesRequest;
import io.nearstream.client.ProtocolCodec.ReplicaTxnFilesResponse;
import io.nearstream.client.ProtocolCodec.ReplicaTxnRequest;
import io.nearstream.client.ProtocolCodec.ResponseFrame;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Malformed input: every decoder refuses it with {@link NearstreamProtocolException}, only. And
 * round trips through both halves of the codec for the replication fields (StreamConfig's
 * replication, ClusterMetadata's replica sets, ReplicaAppend, ReplicaJoin, ReplicaMove,
 * ReplicaCheck, ReplicaTxn, ReplicaTxnFiles, ReplicaPublished).
 */
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
            case REPLICA_CHECK:
                ProtocolCodec.decodeReplicaCheckResponse(body);
                break;
            case REPLICA_TXN_FILES:
                ProtocolCodec.decodeReplicaTxnFilesResponse(body);
                break;
            case REPLICA_APPEND:
            case REPLICA_JOIN:
            case REPLICA_MOVE:
            case REPLICA_TXN:
            case REPLICA_PUBLISHED:
                ProtocolCodec.decodeEmpty(body, "empty");
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
        } else if (d.request() instanceof ProtocolCodec.ReplicaAppendRequest a) {
            entries = List.of(new AppendEntry(a.streamlet(), a.chunk()));
        }
        for (AppendEntry e : entries) {
            Chunks.validate(ByteBufUtil.getBytes(e.chunk()));
        }
    }

    /** Cuts the frame to {@code size} bytes and fixes its length prefix, so the body is short. */
    /** Every truncation of a request frame is refused, and so is a trailing byte. */
    private static void assertEveryCutAndTrailingByteRefused(byte[] frame) {
        for (int size = 0; size < frame.length; size++) {
            byte[] t = truncated(frame, size);
            assertThatThrownBy(() -> decodeRequestFully(t))
                    .as("%d of %d bytes", size, frame.length)
                    .isInstanceOf(NearstreamProtocolException.class);
        }
        byte[] longer =
                truncated(java.util.Arrays.copyOf(frame, frame.length + 1), frame.length + 1);
        assertThatThrownBy(() -> decodeRequestFully(longer))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("trailing");
    }

    /**
     * Every truncation of a response body is refused by {@code decode}, and so is a trailing byte.
     */
    private static void assertEveryCutAndTrailingByteRefused(
            byte[] body, java.util.function.Consumer<ByteBuf> decode) {
        for (int n = 0; n < body.length; n++) {
            ByteBuf cut = Unpooled.wrappedBuffer(body, 0, n);
            assertThatThrownBy(() -> decode.accept(cut))
                    .as("%d of %d bytes", n, body.length)
                    .isInstanceOf(NearstreamProtocolException.class);
        }
        ByteBuf trailing = Unpooled.buffer().writeBytes(body).writeByte(0);
        assertThatThrownBy(() -> decode.accept(trailing))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("trailing");
    }

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

    // ---- replication: StreamConfig.replication, ReplicaSet, ReplicaAppend (14), ReplicaJoin (15),
    // ReplicaMove (16), ReplicaCheck (17), ReplicaTxn (18), ReplicaTxnFiles (19),
    // ReplicaPublished (40)

    @Test
    void streamConfigCarriesReplicationAsItsLastByte() {
        StreamConfig c = new StreamConfig("ab", 3, 4096, 4, 2, Durability.SYNC, -1, 60_000, 3);
        ByteBuf frame = ProtocolCodec.encodeRequest(ALLOC, 7, new CreateStreamRequest(c));
        try {
            // 16-byte prefix and header, then 36 + n body bytes; replication at body offset 35 + n.
            assertThat(frame.readableBytes()).isEqualTo(16 + 36 + 2);
            assertThat(frame.getByte(16 + 35 + 2)).isEqualTo((byte) 3);
            ProtocolTestCodec.DecodedRequest d =
                    ProtocolTestCodec.decodeRequest(
                            Unpooled.wrappedBuffer(ByteBufUtil.getBytes(frame)));
            assertThat(d.request()).isEqualTo(new CreateStreamRequest(c));
        } finally {
            frame.release();
        }
        for (int replication : new int[] {0, 1, 2, 3, 255}) {
            ByteBuf body = Unpooled.buffer();
            StreamConfig r = StreamConfig.of("s", 1).withReplication(replication);
            ProtocolCodec.writeStreamConfig(body, r);
            assertThat(ProtocolCodec.decodeDescribeStreamResponse(body)).isEqualTo(r);
        }
    }

    @Test
    void streamConfigDefaultsToOneCopy() {
        assertThat(StreamConfig.of("s", 2).replication()).isEqualTo(1);
        StreamConfig eight = new StreamConfig("s", 2, 0, 0, 0, Durability.ASYNC, -1, -1);
        assertThat(eight.replication()).isEqualTo(StreamConfig.DEFAULT_REPLICATION);
        assertThat(eight.withReplication(3))
                .isEqualTo(new StreamConfig("s", 2, 0, 0, 0, Durability.ASYNC, -1, -1, 3));
        assertThat(eight.withReplication(2).withDurability(Durability.SYNC).replication())
                .isEqualTo(2);
    }

    @Test
    void replicationThatDoesNotFitAByteIsRefusedByTheEncoder() {
        for (int replication : new int[] {-1, 256}) {
            StreamConfig c = StreamConfig.of("s", 1).withReplication(replication);
            assertThatThrownBy(
                            () -> ProtocolCodec.encodeRequest(ALLOC, 1, new CreateStreamRequest(c)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("replication " + replication);
        }
    }

    @Test
    void clusterMetadataReplicaSetsRoundTrip() {
        ReplicaSet led = new ReplicaSet(-2L, List.of(7, -1, 3), List.of(7, 3));
        ReplicaSet failedOver = new ReplicaSet(5, List.of(3, 7), List.of(7));
        ClusterMetadata m =
                new ClusterMetadata(
                        7,
                        List.of(
                                new BrokerInfo(3, "a:1", "a"),
                                new BrokerInfo(7, "b:2", "b"),
                                new BrokerInfo(-1, "c:3", "c")),
                        List.of(
                                new StreamPlacement(
                                        "r", 9, List.of(7, 7), List.of(led, failedOver)),
                                new StreamPlacement("single", 0, List.of(3)),
                                new StreamPlacement("empty", 1, List.of(), List.of())),
                        ClusterMetadata.NO_CONTROLLER);
        ByteBuf body = Unpooled.buffer();
        ProtocolTestCodec.writeClusterMetadataResponse(body, m);
        ClusterMetadata back = ProtocolCodec.decodeClusterMetadataResponse(body);
        assertThat(back).isEqualTo(m);
        StreamPlacement r = back.placement("r").orElseThrow();
        assertThat(r.replicaSet(0).leaderEpoch()).isEqualTo(-2L); // a u64 above 2^63
        assertThat(r.replicaSet(0).replication()).isEqualTo(3);
        assertThat(r.replicaSet(0).isReplica(-1)).isTrue(); // broker id 0xFFFFFFFF
        assertThat(r.replicaSet(1).isInSync(3)).isFalse();
        assertThat(back.placement("single").orElseThrow().replicaSet(0))
                .isEqualTo(ReplicaSet.single(3))
                .isEqualTo(new ReplicaSet(0, List.of(3), List.of(3)));
    }

    @Test
    void aPlacementHasOneReplicaSetPerStreamlet() {
        assertThatThrownBy(
                        () ->
                                new StreamPlacement(
                                        "s", 1, List.of(1, 2), List.of(ReplicaSet.single(1))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("2 owners but 1 replica sets");
        assertThat(new StreamPlacement("s", 1, List.of(4, 5)).replicaSets())
                .containsExactly(ReplicaSet.single(4), ReplicaSet.single(5));
    }

    @Test
    void replicaSetCountsAreCheckedAgainstTheBytesLeft() {
        // One stream of one streamlet: owner, then a ReplicaSet whose r = 255 runs past the end.
        ByteBuf body =
                Unpooled.buffer()
                        .writeIntLE(1) // broker_id
                        .writeIntLE(0) // no brokers
                        .writeIntLE(1) // one stream
                        .writeShortLE(1)
                        .writeByte('s')
                        .writeIntLE(1) // version
                        .writeIntLE(1) // count
                        .writeIntLE(1) // owner
                        .writeLongLE(0)
                        .writeByte(255)
                        .writeIntLE(1)
                        .writeByte(1)
                        .writeIntLE(1)
                        .writeIntLE(1); // controller
        assertThatThrownBy(() -> ProtocolCodec.decodeClusterMetadataResponse(body))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("r = 255");
        // A streamlet count that cannot fit 14 bytes a streamlet is refused before allocating.
        ByteBuf huge =
                Unpooled.buffer()
                        .writeIntLE(1)
                        .writeIntLE(0)
                        .writeIntLE(1)
                        .writeShortLE(1)
                        .writeByte('s')
                        .writeIntLE(1)
                        .writeIntLE(2)
                        .writeZero(4 * 2 + 10);
        assertThatThrownBy(() -> ProtocolCodec.decodeClusterMetadataResponse(huge))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("count = 2");
    }

    @Test
    void replicaSetListsMustFitTheirByteCounts() {
        List<Integer> many = java.util.Collections.nCopies(256, 1);
        ClusterMetadata m =
                new ClusterMetadata(
                        1,
                        List.of(),
                        List.of(
                                new StreamPlacement(
                                        "s",
                                        1,
                                        List.of(1),
                                        List.of(new ReplicaSet(0, many, List.of(1))))),
                        1);
        assertThatThrownBy(
                        () -> ProtocolTestCodec.writeClusterMetadataResponse(Unpooled.buffer(), m))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("256 replicas");
    }

    @Test
    void replicaAppendRequestLayoutAndRoundTrip() {
        byte[] chunk = new ChunkBuilder().add(new byte[] {1, 2, 3}).build(9, 4, 100);
        Position at = new Position(0x100000002L, 0x200000003L, 0x1234);
        ByteBuf frame =
                ProtocolCodec.encodeRequest(
                        ALLOC,
                        0x0102030405060708L,
                        new ReplicaAppendRequest(
                                "s", 258, -2, -3L, at, Unpooled.wrappedBuffer(chunk)));
        byte[] bytes;
        try {
            // The chunk is a component of the frame, not a copy.
            assertThat(frame).isInstanceOf(CompositeByteBuf.class);
            boolean shared = false;
            for (ByteBuf component : (CompositeByteBuf) frame) {
                shared |= component.hasArray() && component.array() == chunk;
            }
            assertThat(shared).isTrue();
            bytes = ByteBufUtil.getBytes(frame);
        } finally {
            frame.release();
        }
        ByteBuf expected = Unpooled.buffer().writeIntLE(0);
        expected.writeByte(1).writeByte(0).writeShortLE(14).writeLongLE(0x0102030405060708L);
        expected.writeShortLE(1).writeByte('s');
        expected.writeIntLE(258).writeIntLE(-2).writeLongLE(-3L);
        expected.writeLongLE(0x100000002L).writeLongLE(0x200000003L).writeIntLE(0x1234);
        expected.writeIntLE(chunk.length).writeBytes(chunk);
        expected.setIntLE(0, expected.readableBytes() - 4);
        assertThat(bytes).isEqualTo(ByteBufUtil.getBytes(expected));

        ProtocolTestCodec.DecodedRequest d =
                ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(bytes));
        assertThat(d.header().opcode()).isEqualTo(Opcode.REPLICA_APPEND.code());
        ReplicaAppendRequest r = (ReplicaAppendRequest) d.request();
        assertThat(r.stream()).isEqualTo("s");
        assertThat(r.streamlet()).isEqualTo(258);
        assertThat(r.leader()).isEqualTo(-2);
        assertThat(r.leaderEpoch()).isEqualTo(-3L);
        assertThat(r.at()).isEqualTo(at);
        assertThat(ByteBufUtil.getBytes(r.chunk())).isEqualTo(chunk);
        decodeRequestFully(bytes);
    }

    @Test
    void aReplicaAppendThatCannotBeEncodedReleasesItsChunk() {
        ByteBuf chunk = Unpooled.wrappedBuffer(new byte[] {1});
        assertThatThrownBy(
                        () ->
                                ProtocolCodec.encodeRequest(
                                        ALLOC,
                                        1,
                                        new ReplicaAppendRequest(
                                                "é".repeat(40_000),
                                                0,
                                                1,
                                                1,
                                                Position.EARLIEST,
                                                chunk)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(chunk.refCnt()).isZero();
    }

    @Test
    void replicaJoinRequestLayoutAndRoundTrip() {
        Position tail = new Position(0x100000002L, 0x200000003L, 0x00ABCDEF);
        ByteBuf frame =
                ProtocolCodec.encodeRequest(
                        ALLOC,
                        0x0102030405060708L,
                        new ReplicaJoinRequest("s", 3, -2, -3L, tail, 2));
        byte[] bytes;
        try {
            bytes = ByteBufUtil.getBytes(frame);
        } finally {
            frame.release();
        }
        ByteBuf expected = Unpooled.buffer().writeIntLE(0);
        expected.writeByte(1).writeByte(0).writeShortLE(15).writeLongLE(0x0102030405060708L);
        expected.writeShortLE(1).writeByte('s');
        expected.writeIntLE(3).writeIntLE(-2).writeLongLE(-3L);
        expected.writeLongLE(0x100000002L).writeLongLE(0x200000003L).writeIntLE(0x00ABCDEF);
        expected.writeByte(2);
        expected.setIntLE(0, expected.readableBytes() - 4);
        // 12-byte header, then 2 + n + 4 + 4 + 8 + 20 + 1 body bytes.
        assertThat(bytes).hasSize(4 + 12 + 3 + 37);
        assertThat(bytes).isEqualTo(ByteBufUtil.getBytes(expected));

        ProtocolTestCodec.DecodedRequest d =
                ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(bytes));
        assertThat(d.header().opcode()).isEqualTo(Opcode.REPLICA_JOIN.code());
        assertThat(d.request()).isEqualTo(new ReplicaJoinRequest("s", 3, -2, -3L, tail, 2));
        assertThat(Opcode.fromCode(15)).isEqualTo(Opcode.REPLICA_JOIN);
        assertThat(Opcode.REPLICA_JOIN.wireName()).isEqualTo("ReplicaJoin");
        decodeRequestFully(bytes);
    }

    @Test
    void replicaMoveRequestLayoutAndRoundTrip() {
        checkStreamletAndBrokerRequest(
                new ReplicaMoveRequest("s", 3, -2), Opcode.REPLICA_MOVE, 16, "ReplicaMove");
    }

    @Test
    void replicaCheckRequestLayoutAndRoundTrip() {
        checkStreamletAndBrokerRequest(
                new ReplicaCheckRequest("s", 3, -2), Opcode.REPLICA_CHECK, 17, "ReplicaCheck");
    }

    @Test
    void replicaTxnFilesRequestLayoutAndRoundTrip() {
        ReplicaTxnFilesRequest r =
                new ReplicaTxnFilesRequest(
                        "s",
                        3,
                        -2, // a u32 above 2^31
                        0x00400000,
                        List.of(
                                new ReplicaTxnFilesRequest.Held("txn-ü.seg", 0x100000040L),
                                new ReplicaTxnFilesRequest.Held("", -5L))); // u64 above 2^63
        byte[] bytes = encode(r);
        int n = 1;
        int body = 4 + 12;
        // 12-byte header, then 2 + n + 4 + 4 + 4 + 4 + Σ (2 + k + 8) body bytes.
        assertThat(bytes).hasSize(body + 2 + n + 16 + (2 + 10 + 8) + (2 + 8));
        ByteBuf b = Unpooled.wrappedBuffer(bytes);
        assertThat(b.getShortLE(6)).isEqualTo((short) 19);
        assertThat(b.getShortLE(body)).isEqualTo((short) n);
        assertThat(b.getByte(body + 2)).isEqualTo((byte) 's');
        assertThat(b.getIntLE(body + 2 + n)).isEqualTo(3);
        assertThat(b.getIntLE(body + 6 + n)).isEqualTo(-2);
        assertThat(b.getIntLE(body + 10 + n)).isEqualTo(0x00400000);
        assertThat(b.getIntLE(body + 14 + n)).isEqualTo(2);
        int held = body + 18 + n;
        assertThat(b.getShortLE(held)).isEqualTo((short) 10);
        assertThat(b.toString(held + 2, 10, StandardCharsets.UTF_8)).isEqualTo("txn-ü.seg");
        assertThat(b.getLongLE(held + 12)).isEqualTo(0x100000040L);
        assertThat(b.getShortLE(held + 20)).isEqualTo((short) 0);
        assertThat(b.getLongLE(held + 22)).isEqualTo(-5L);

        ProtocolTestCodec.DecodedRequest d =
                ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(bytes));
        assertThat(d.header().opcode()).isEqualTo(Opcode.REPLICA_TXN_FILES.code());
        assertThat(d.request()).isEqualTo(r).hasSameHashCodeAs(r);
        assertThat(Opcode.fromCode(19)).isEqualTo(Opcode.REPLICA_TXN_FILES);
        assertThat(Opcode.REPLICA_TXN_FILES.wireName()).isEqualTo("ReplicaTxnFiles");
        decodeRequestFully(bytes);

        // A first request holds nothing: its count is 0 and the body ends there.
        ReplicaTxnFilesRequest first = new ReplicaTxnFilesRequest("s", 3, 1, 1 << 20, List.of());
        byte[] firstBytes = encode(first);
        assertThat(firstBytes).hasSize(body + 2 + n + 16);
        assertThat(Unpooled.wrappedBuffer(firstBytes).getIntLE(body + 14 + n)).isZero();
        assertThat(ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(firstBytes)).request())
                .isEqualTo(first);

        assertEveryCutAndTrailingByteRefused(bytes);
        // A count that cannot fit 10 bytes a held entry is refused before anything is allocated.
        byte[] huge = firstBytes.clone();
        Unpooled.wrappedBuffer(huge).setIntLE(body + 14 + n, -1);
        assertThatThrownBy(() -> decodeRequestFully(huge))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("count = 4294967295");
    }

    /**
     * ReplicaMove and ReplicaCheck share one layout: stream "s", streamlet 3 and a broker id -2 (a
     * u32 above 2^31). (ReplicaTxnFiles' body starts so too, then pages: see its own test.)
     */
    private static void checkStreamletAndBrokerRequest(
            ProtocolCodec.Request request, Opcode opcode, int code, String wireName) {
        ByteBuf frame = ProtocolCodec.encodeRequest(ALLOC, 0x0102030405060708L, request);
        byte[] bytes;
        try {
            bytes = ByteBufUtil.getBytes(frame);
        } finally {
            frame.release();
        }
        ByteBuf expected = Unpooled.buffer().writeIntLE(0);
        expected.writeByte(1).writeByte(0).writeShortLE(code).writeLongLE(0x0102030405060708L);
        expected.writeShortLE(1).writeByte('s');
        expected.writeIntLE(3).writeIntLE(-2);
        expected.setIntLE(0, expected.readableBytes() - 4);
        // 12-byte header, then 2 + n + 4 + 4 body bytes.
        assertThat(bytes).hasSize(4 + 12 + 3 + 8);
        assertThat(bytes).isEqualTo(ByteBufUtil.getBytes(expected));

        ProtocolTestCodec.DecodedRequest d =
                ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(bytes));
        assertThat(d.header().opcode()).isEqualTo(opcode.code());
        assertThat(d.request()).isEqualTo(request);
        assertThat(Opcode.fromCode(code)).isEqualTo(opcode);
        assertThat(opcode.wireName()).isEqualTo(wireName);
        decodeRequestFully(bytes);
    }

    @Test
    void replicaCheckResponseLayoutAndRoundTrip() {
        ReplicaCheckResponse r =
                new ReplicaCheckResponse(
                        -3L, // a u64 above 2^63
                        List.of(
                                new ReplicaCheckResponse.EpochStart(0, 0),
                                new ReplicaCheckResponse.EpochStart(-4L, 0x100000002L)),
                        List.of(
                                new ReplicaCheckResponse.SegmentExtent(1, 1, 0x00ABCDEF),
                                new ReplicaCheckResponse.SegmentExtent(
                                        0x100000002L, 0x200000003L, -1))); // u32 0xFFFFFFFF
        ByteBuf body = Unpooled.buffer();
        ProtocolTestCodec.writeReplicaCheckResponse(body, r);
        ByteBuf expected = Unpooled.buffer().writeLongLE(-3L);
        expected.writeIntLE(2)
                .writeLongLE(0)
                .writeLongLE(0)
                .writeLongLE(-4L)
                .writeLongLE(0x100000002L);
        expected.writeIntLE(2).writeLongLE(1).writeLongLE(1).writeIntLE(0x00ABCDEF);
        expected.writeLongLE(0x100000002L).writeLongLE(0x200000003L).writeIntLE(-1);
        // 8 + 4 + 16e + 4 + 20s bytes.
        assertThat(body.readableBytes()).isEqualTo(8 + 4 + 16 * 2 + 4 + 20 * 2);
        byte[] bytes = ByteBufUtil.getBytes(body);
        assertThat(bytes).isEqualTo(ByteBufUtil.getBytes(expected));
        assertThat(ProtocolCodec.decodeReplicaCheckResponse(Unpooled.wrappedBuffer(bytes)))
                .isEqualTo(r);

        // A leader without a history and without segments.
        ReplicaCheckResponse empty = new ReplicaCheckResponse(7, List.of(), List.of());
        ByteBuf none = Unpooled.buffer();
        ProtocolTestCodec.writeReplicaCheckResponse(none, empty);
        assertThat(none.readableBytes()).isEqualTo(16);
        assertThat(ProtocolCodec.decodeReplicaCheckResponse(none)).isEqualTo(empty);

        assertEveryCutAndTrailingByteRefused(bytes, ProtocolCodec::decodeReplicaCheckResponse);
        // Counts that cannot fit the bytes left are refused before anything is allocated.
        ByteBuf hugeEpochs = Unpooled.buffer().writeLongLE(1).writeIntLE(-1).writeZero(20);
        assertThatThrownBy(() -> ProtocolCodec.decodeReplicaCheckResponse(hugeEpochs))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("e = 4294967295");
        ByteBuf hugeSegments =
                Unpooled.buffer().writeLongLE(1).writeIntLE(0).writeIntLE(2).writeZero(20 + 19);
        assertThatThrownBy(() -> ProtocolCodec.decodeReplicaCheckResponse(hugeSegments))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("s = 2");
    }

    @Test
    void replicaTxnRequestLayoutAndRoundTrip() {
        byte[] data = {1, 2, 3, (byte) 0xFF};
        ReplicaTxnRequest r =
                new ReplicaTxnRequest(
                        "s",
                        258,
                        -2, // u32 0xFFFFFFFE
                        -3L, // a u64 above 2^63
                        ReplicaTxnRequest.Op.APPEND,
                        "txn.log",
                        0x100000040L,
                        "",
                        data);
        byte[] bytes = encode(r);
        ByteBuf expected = Unpooled.buffer().writeIntLE(0);
        expected.writeByte(1).writeByte(0).writeShortLE(18).writeLongLE(0x0102030405060708L);
        expected.writeShortLE(1).writeByte('s');
        expected.writeIntLE(258).writeIntLE(-2).writeLongLE(-3L).writeByte(1);
        expected.writeShortLE(7).writeBytes("txn.log".getBytes(StandardCharsets.UTF_8));
        expected.writeLongLE(0x100000040L);
        expected.writeShortLE(0);
        expected.writeIntLE(4).writeBytes(data);
        expected.setIntLE(0, expected.readableBytes() - 4);
        // 12-byte header, then 2 + n + 4 + 4 + 8 + 1 + (2 + f) + 8 + (2 + t) + (4 + k) body bytes.
        assertThat(bytes).hasSize(4 + 12 + 3 + 17 + 9 + 8 + 2 + 8);
        assertThat(bytes).isEqualTo(ByteBufUtil.getBytes(expected));

        ProtocolTestCodec.DecodedRequest d =
                ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(bytes));
        assertThat(d.header().opcode()).isEqualTo(Opcode.REPLICA_TXN.code());
        assertThat(d.request()).isEqualTo(r).hasSameHashCodeAs(r);
        // The data is a copy, not a view of the frame.
        assertThat(((ReplicaTxnRequest) d.request()).data()).isNotSameAs(data).isEqualTo(data);
        assertThat(Opcode.fromCode(18)).isEqualTo(Opcode.REPLICA_TXN);
        assertThat(Opcode.REPLICA_TXN.wireName()).isEqualTo("ReplicaTxn");
        decodeRequestFully(bytes);

        // Every op round-trips, with a non-ASCII name, an empty one and empty data.
        for (ReplicaTxnRequest r2 :
                List.of(
                        new ReplicaTxnRequest(
                                "s",
                                3,
                                1,
                                1,
                                ReplicaTxnRequest.Op.REPLACE,
                                "txn.log",
                                0,
                                "",
                                new byte[100]),
                        new ReplicaTxnRequest(
                                "s",
                                3,
                                1,
                                1,
                                ReplicaTxnRequest.Op.RENAME,
                                "txn-1-2.seg",
                                0,
                                "1-2.seg",
                                new byte[0]),
                        new ReplicaTxnRequest(
                                "ü",
                                0,
                                0,
                                0,
                                ReplicaTxnRequest.Op.DELETE,
                                "",
                                0,
                                "",
                                new byte[0]))) {
            byte[] frame = encode(r2);
            assertThat(ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(frame)).request())
                    .isEqualTo(r2);
        }

        // Content, not identity, makes two requests equal.
        assertThat(r)
                .isEqualTo(
                        new ReplicaTxnRequest(
                                "s",
                                258,
                                -2,
                                -3L,
                                ReplicaTxnRequest.Op.APPEND,
                                "txn.log",
                                0x100000040L,
                                "",
                                data.clone()))
                .isNotEqualTo(
                        new ReplicaTxnRequest(
                                "s",
                                258,
                                -2,
                                -3L,
                                ReplicaTxnRequest.Op.APPEND,
                                "txn.log",
                                0x100000040L,
                                "",
                                new byte[] {1, 2, 3, 4}));

        assertEveryCutAndTrailingByteRefused(bytes);
        // A data length that runs past the end is refused.
        byte[] pastEnd = bytes.clone();
        pastEnd[bytes.length - 8] = 5;
        assertThatThrownBy(() -> decodeRequestFully(pastEnd))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("runs past the end");
    }

    @Test
    void replicaTxnOpOutsideOneToFourIsMalformed() {
        ReplicaTxnRequest r =
                new ReplicaTxnRequest(
                        "s",
                        3,
                        1,
                        1,
                        ReplicaTxnRequest.Op.DELETE,
                        "txn-1-2.seg",
                        0,
                        "",
                        new byte[0]);
        byte[] bytes = encode(r);
        int opAt = 4 + 12 + 3 + 4 + 4 + 8;
        assertThat(bytes[opAt]).isEqualTo((byte) 4);
        for (int code = 0; code < 256; code++) {
            byte[] frame = bytes.clone();
            frame[opAt] = (byte) code;
            if (code >= 1 && code <= 4) {
                ReplicaTxnRequest.Op op = ReplicaTxnRequest.Op.fromCode(code);
                assertThat(op.code()).isEqualTo(code);
                assertThat(
                                ((ReplicaTxnRequest)
                                                ProtocolTestCodec.decodeRequest(
                                                                Unpooled.wrappedBuffer(frame))
                                                        .request())
                                        .op())
                        .isEqualTo(op);
                continue;
            }
            assertThat(ReplicaTxnRequest.Op.fromCode(code)).isNull();
            assertThatThrownBy(() -> decodeRequestFully(frame))
                    .as("op %d", code)
                    .isInstanceOf(NearstreamProtocolException.class)
                    .hasMessageContaining("op " + code)
                    .satisfies(
                            e ->
                                    assertThat(((NearstreamProtocolException) e).status())
                                            .isEqualTo(StatusCode.MALFORMED_REQUEST));
        }
    }

    @Test
    void replicaTxnFilesResponseLayoutAndRoundTrip() {
        ReplicaTxnFilesResponse r =
                new ReplicaTxnFilesResponse(
                        false,
                        List.of(
                                new ReplicaTxnFilesResponse.TxnFile(
                                        "txn.log", 2, 0, new byte[] {1, 2}),
                                new ReplicaTxnFilesResponse.TxnFile("", 0, 0, new byte[0]),
                                // a page of a part above 4 GiB, u64 size and offset above 2^63
                                new ReplicaTxnFilesResponse.TxnFile(
                                        "txn-ü.seg", -2L, -4L, new byte[] {(byte) 0xFF})));
        ByteBuf body = Unpooled.buffer();
        ProtocolTestCodec.writeReplicaTxnFilesResponse(body, r);
        ByteBuf expected = Unpooled.buffer().writeByte(0).writeIntLE(3);
        expected.writeShortLE(7).writeBytes("txn.log".getBytes(StandardCharsets.UTF_8));
        expected.writeLongLE(2).writeLongLE(0);
        expected.writeIntLE(2).writeByte(1).writeByte(2);
        expected.writeShortLE(0).writeLongLE(0).writeLongLE(0).writeIntLE(0);
        expected.writeShortLE(10).writeBytes("txn-ü.seg".getBytes(StandardCharsets.UTF_8));
        expected.writeLongLE(-2L).writeLongLE(-4L);
        expected.writeIntLE(1).writeByte(0xFF);
        // 1 + 4 + Σ (2 + n + 8 + 8 + 4 + k) bytes.
        assertThat(body.readableBytes())
                .isEqualTo(1 + 4 + (2 + 7 + 20 + 2) + (2 + 20) + (2 + 10 + 20 + 1));
        byte[] bytes = ByteBufUtil.getBytes(body);
        assertThat(bytes).isEqualTo(ByteBufUtil.getBytes(expected));
        // complete at 0, count at 1, the first file's size at 5 + 2 + 7, its offset 8 bytes on.
        ByteBuf at = Unpooled.wrappedBuffer(bytes);
        assertThat(at.getByte(0)).isZero();
        assertThat(at.getIntLE(1)).isEqualTo(3);
        assertThat(at.getLongLE(14)).isEqualTo(2);
        assertThat(at.getLongLE(22)).isZero();
        assertThat(at.getIntLE(30)).isEqualTo(2);
        int third = 5 + (2 + 7 + 20 + 2) + (2 + 20);
        assertThat(at.getLongLE(third + 12)).isEqualTo(-2L);
        assertThat(at.getLongLE(third + 20)).isEqualTo(-4L);
        ReplicaTxnFilesResponse back =
                ProtocolCodec.decodeReplicaTxnFilesResponse(Unpooled.wrappedBuffer(bytes));
        assertThat(back).isEqualTo(r).hasSameHashCodeAs(r);
        // Size and offset take part in equality.
        assertThat(new ReplicaTxnFilesResponse.TxnFile("a", 2, 0, new byte[1]))
                .isNotEqualTo(new ReplicaTxnFilesResponse.TxnFile("a", 2, 1, new byte[1]))
                .isNotEqualTo(new ReplicaTxnFilesResponse.TxnFile("a", 3, 0, new byte[1]));

        // A scope without files: the answer is complete.
        ReplicaTxnFilesResponse empty = new ReplicaTxnFilesResponse(true, List.of());
        ByteBuf none = Unpooled.buffer();
        ProtocolTestCodec.writeReplicaTxnFilesResponse(none, empty);
        assertThat(none.readableBytes()).isEqualTo(5);
        assertThat(none.getByte(0)).isEqualTo((byte) 1);
        assertThat(ProtocolCodec.decodeReplicaTxnFilesResponse(none)).isEqualTo(empty);
        assertThat(empty).isNotEqualTo(new ReplicaTxnFilesResponse(false, List.of()));

        // complete is a flag: any byte but 0 and 1 is refused.
        ByteBuf flag = Unpooled.buffer().writeByte(2).writeIntLE(0);
        assertThatThrownBy(() -> ProtocolCodec.decodeReplicaTxnFilesResponse(flag))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("complete");

        // The contents are copies: they outlive the frame's bytes.
        byte[] scratch = bytes.clone();
        ReplicaTxnFilesResponse copied =
                ProtocolCodec.decodeReplicaTxnFilesResponse(Unpooled.wrappedBuffer(scratch));
        java.util.Arrays.fill(scratch, (byte) 0);
        assertThat(copied).isEqualTo(r);

        assertEveryCutAndTrailingByteRefused(bytes, ProtocolCodec::decodeReplicaTxnFilesResponse);
        // A count that cannot fit 22 bytes a file is refused before anything is allocated.
        ByteBuf huge = Unpooled.buffer().writeByte(1).writeIntLE(-1).writeZero(100);
        assertThatThrownBy(() -> ProtocolCodec.decodeReplicaTxnFilesResponse(huge))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("count = 4294967295");
        ByteBuf two = Unpooled.buffer().writeByte(1).writeIntLE(2).writeZero(43);
        assertThatThrownBy(() -> ProtocolCodec.decodeReplicaTxnFilesResponse(two))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("count = 2");
        // A data length that runs past the end is refused.
        ByteBuf pastEnd =
                Unpooled.buffer()
                        .writeByte(1)
                        .writeIntLE(1)
                        .writeShortLE(0)
                        .writeLongLE(0)
                        .writeLongLE(0)
                        .writeIntLE(-2);
        assertThatThrownBy(() -> ProtocolCodec.decodeReplicaTxnFilesResponse(pastEnd))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("runs past the end");
        // A piece past its file's size is refused: an offset beyond the size, or more bytes than
        // the size leaves (also when the u64s sit above 2^63).
        for (long[] sizeAndOffset :
                new long[][] {{4, 5}, {4, 3}, {-1L, -1L}, {1L << 63, (1L << 63) + 1}}) {
            ByteBuf past =
                    Unpooled.buffer()
                            .writeByte(1)
                            .writeIntLE(1)
                            .writeShortLE(0)
                            .writeLongLE(sizeAndOffset[0])
                            .writeLongLE(sizeAndOffset[1])
                            .writeIntLE(2)
                            .writeShort(0);
            assertThatThrownBy(() -> ProtocolCodec.decodeReplicaTxnFilesResponse(past))
                    .as("size %s, offset %s", sizeAndOffset[0], sizeAndOffset[1])
                    .isInstanceOf(NearstreamProtocolException.class)
                    .hasMessageContaining("past its size");
        }
        // A piece that ends at its file's size is fine.
        ByteBuf toEnd =
                Unpooled.buffer()
                        .writeByte(1)
                        .writeIntLE(1)
                        .writeShortLE(0)
                        .writeLongLE(-1L)
                        .writeLongLE(-3L)
                        .writeIntLE(2)
                        .writeShort(0);
        assertThat(ProtocolCodec.decodeReplicaTxnFilesResponse(toEnd).files().get(0).data())
                .hasSize(2);
    }

    /** ReplicaPublished's view in the golden frame's shape, with values above 2^31 and 2^63. */
    private static ReplicaPublishedRequest publishedView() {
        return new ReplicaPublishedRequest(
                "s",
                258,
                -2, // u32 0xFFFFFFFE
                -3L, // a u64 above 2^63
                -7L,
                -4L,
                new Position(0x100000002L, 0x200000003L, 0),
                List.of(
                        new ReplicaPublishedRequest.PublishedGroup(
                                -5L,
                                true,
                                List.of(
                                        new ReplicaPublishedRequest.PublishedSegment(
                                                0x200000007L, -1), // u32 0xFFFFFFFF
                                        new ReplicaPublishedRequest.PublishedSegment(-6L, 0))),
                        // A group whose first segment is being opened holds none yet.
                        new ReplicaPublishedRequest.PublishedGroup(
                                0x100000006L, false, List.of())));
    }

    @Test
    void replicaPublishedRequestLayoutAndRoundTrip() {
        ReplicaPublishedRequest r = publishedView();
        byte[] bytes = encode(r);
        ByteBuf expected = Unpooled.buffer().writeIntLE(0);
        expected.writeByte(1).writeByte(0).writeShortLE(40).writeLongLE(0x0102030405060708L);
        expected.writeShortLE(1).writeByte('s');
        expected.writeIntLE(258).writeIntLE(-2).writeLongLE(-3L).writeLongLE(-7L).writeLongLE(-4L);
        expected.writeLongLE(0x100000002L).writeLongLE(0x200000003L).writeIntLE(0);
        expected.writeIntLE(2);
        expected.writeLongLE(-5L).writeByte(1).writeIntLE(2);
        expected.writeLongLE(0x200000007L).writeIntLE(-1);
        expected.writeLongLE(-6L).writeIntLE(0);
        expected.writeLongLE(0x100000006L).writeByte(0).writeIntLE(0);
        expected.setIntLE(0, expected.readableBytes() - 4);
        // 12-byte header, then 2 + n + 4 + 4 + 8 + 8 + 8 + 20 + 4 + Σ (13 + 12 × segments) body
        // bytes.
        assertThat(bytes).hasSize(4 + 12 + 3 + 56 + (13 + 2 * 12) + 13);
        assertThat(bytes).isEqualTo(ByteBufUtil.getBytes(expected));

        ProtocolTestCodec.DecodedRequest d =
                ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(bytes));
        assertThat(d.header().opcode()).isEqualTo(Opcode.REPLICA_PUBLISHED.code());
        assertThat(d.request()).isEqualTo(r).hasSameHashCodeAs(r);
        assertThat(Opcode.fromCode(40)).isEqualTo(Opcode.REPLICA_PUBLISHED);
        assertThat(Opcode.REPLICA_PUBLISHED.wireName()).isEqualTo("ReplicaPublished");
        decodeRequestFully(bytes);

        // A leader that holds no group: an all-zero head, no groups, the body ends at the count.
        ReplicaPublishedRequest empty =
                new ReplicaPublishedRequest("ü", 0, 1, 1, 0, 0, Position.EARLIEST, List.of());
        byte[] emptyBytes = encode(empty);
        int body = 4 + 12;
        int n = "ü".getBytes(StandardCharsets.UTF_8).length;
        assertThat(emptyBytes).hasSize(body + 2 + n + 56);
        assertThat(Unpooled.wrappedBuffer(emptyBytes).getIntLE(body + 54 + n)).isZero();
        assertThat(ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(emptyBytes)).request())
                .isEqualTo(empty);

        assertEveryCutAndTrailingByteRefused(bytes);
        // Counts that cannot fit 13 bytes a group, 12 a segment, are refused before allocating.
        byte[] hugeGroups = emptyBytes.clone();
        Unpooled.wrappedBuffer(hugeGroups).setIntLE(body + 54 + n, -1);
        assertThatThrownBy(() -> decodeRequestFully(hugeGroups))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("group_count = 4294967295");
        // The first group's segment_count (group offset 9): 4 × 12 bytes do not fit in 37.
        byte[] hugeSegments = bytes.clone();
        Unpooled.wrappedBuffer(hugeSegments).setIntLE(body + 58 + 1 + 9, 4);
        assertThatThrownBy(() -> decodeRequestFully(hugeSegments))
                .isInstanceOf(NearstreamProtocolException.class)
                .hasMessageContaining("segment_count = 4");
    }

    @Test
    void replicaPublishedClosedOtherThanZeroOrOneIsMalformed() {
        byte[] bytes = encode(publishedView());
        // Each group's closed byte: group offset 8; the second group starts 13 + 2 × 12 bytes on.
        int groupsAt = 4 + 12 + 58 + 1; // body offset 58 + n, n = 1
        int[] closedAt = {groupsAt + 8, groupsAt + 13 + 2 * 12 + 8};
        assertThat(bytes[closedAt[0]]).isEqualTo((byte) 1);
        assertThat(bytes[closedAt[1]]).isEqualTo((byte) 0);
        for (int g = 0; g < closedAt.length; g++) {
            for (int code = 0; code < 256; code++) {
                byte[] frame = bytes.clone();
                frame[closedAt[g]] = (byte) code;
                if (code <= 1) {
                    ReplicaPublishedRequest r =
                            (ReplicaPublishedRequest)
                                    ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(frame))
                                            .request();
                    assertThat(r.groups().get(g).closed()).isEqualTo(code == 1);
                    assertThat(encode(r)).isEqualTo(frame);
                    continue;
                }
                assertThatThrownBy(() -> decodeRequestFully(frame))
                        .as("group %d, closed %d", g, code)
                        .isInstanceOf(NearstreamProtocolException.class)
                        .hasMessageContaining("closed is a bool but holds " + code)
                        .satisfies(
                                e ->
                                        assertThat(((NearstreamProtocolException) e).status())
                                                .isEqualTo(StatusCode.MALFORMED_REQUEST));
            }
        }
    }

    /**
     * ReplicaTxn (18) and ReplicaTxnFiles (19) are known opcodes now; 0, 23–29, 37–39 and 41 on
     * stay unassigned, and a request with one of them is refused as UNKNOWN_OPCODE.
     */
    @Test
    void opcodesEighteenAndNineteenAreAssigned() {
        assertThat(Opcode.fromCode(18)).isEqualTo(Opcode.REPLICA_TXN);
        assertThat(Opcode.fromCode(19)).isEqualTo(Opcode.REPLICA_TXN_FILES);
        assertThat(Opcode.REPLICA_TXN_FILES.wireName()).isEqualTo("ReplicaTxnFiles");
        for (int code = 1; code <= 22; code++) {
            assertThat(Opcode.fromCode(code)).as("opcode %d", code).isNotNull();
            assertThat(Opcode.fromCode(code).code()).isEqualTo(code);
        }
        List<Integer> unassigned = new ArrayList<>(List.of(0, 37, 38, 39, 41, 99, 0xFFFF));
        for (int code = 23; code <= 29; code++) {
            unassigned.add(code);
        }
        for (int code : unassigned) {
            assertThat(Opcode.fromCode(code)).as("opcode %d", code).isNull();
            byte[] frame = encode(new ReplicaTxnFilesRequest("s", 3, 1, 1 << 20, List.of()));
            frame[6] = (byte) code;
            frame[7] = (byte) (code >>> 8);
            assertThatThrownBy(() -> ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(frame)))
                    .as("opcode %d", code)
                    .isInstanceOf(NearstreamProtocolException.class)
                    .satisfies(
                            e ->
                                    assertThat(((NearstreamProtocolException) e).status())
                                            .isEqualTo(StatusCode.UNKNOWN_OPCODE));
        }
    }

    private static byte[] encode(ProtocolCodec.Request request) {
        ByteBuf frame = ProtocolCodec.encodeRequest(ALLOC, 0x0102030405060708L, request);
        try {
            return ByteBufUtil.getBytes(frame);
        } finally {
            frame.release();
        }
    }
}
