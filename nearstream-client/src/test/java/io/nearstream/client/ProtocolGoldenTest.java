package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import io.nearstream.client.ProtocolCodec.AppendEntry;
import io.nearstream.client.ProtocolCodec.AppendRequest;
import io.nearstream.client.ProtocolCodec.ClusterMetadataRequest;
import io.nearstream.client.ProtocolCodec.CreateStreamRequest;
import io.nearstream.client.ProtocolCodec.DeleteStreamRequest;
import io.nearstream.client.ProtocolCodec.DescribeStreamRequest;
import io.nearstream.client.ProtocolCodec.FetchRequest;
import io.nearstream.client.ProtocolCodec.FrameHeader;
import io.nearstream.client.ProtocolCodec.HandshakeRequest;
import io.nearstream.client.ProtocolCodec.HandshakeResponse;
import io.nearstream.client.ProtocolCodec.ListStreamsRequest;
import io.nearstream.client.ProtocolCodec.LookupTimestampRequest;
import io.nearstream.client.ProtocolCodec.MetadataRequest;
import io.nearstream.client.ProtocolCodec.MoveStreamletRequest;
import io.nearstream.client.ProtocolCodec.PushCloseRequest;
import io.nearstream.client.ProtocolCodec.PushSubscribeRequest;
import io.nearstream.client.ProtocolCodec.PushUpdateRequest;
import io.nearstream.client.ProtocolCodec.ReplicaAppendRequest;
import io.nearstream.client.ProtocolCodec.ReplicaCheckRequest;
import io.nearstream.client.ProtocolCodec.ReplicaCheckResponse;
import io.nearstream.client.ProtocolCodec.ReplicaJoinRequest;
import io.nearstream.client.ProtocolCodec.ReplicaMoveRequest;
import io.nearstream.client.ProtocolCodec.ReplicaPublishedRequest;
import io.nearstream.client.ProtocolCodec.ReplicaTxnFilesRequest;
import io.nearstream.client.ProtocolCodec.ReplicaTxnFilesResponse;
import io.nearstream.client.ProtocolCodec.ReplicaTxnRequest;
import io.nearstream.client.ProtocolCodec.Request;
import io.nearstream.client.ProtocolCodec.ResponseFrame;
import io.nearstream.client.ProtocolCodec.SealStreamletRequest;
import io.nearstream.client.ProtocolCodec.StatsRequest;
import io.nearstream.client.ProtocolCodec.TimestampQuery;
import io.nearstream.client.ProtocolCodec.TxnAppendRequest;
import io.nearstream.client.ProtocolCodec.TxnInitRequest;
import io.nearstream.client.ProtocolCodec.TxnListRequest;
import io.nearstream.client.ProtocolCodec.TxnRefRequest;
import io.nearstream.client.ProtocolTestCodec.DecodedRequest;
import io.nearstream.testing.Json;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Decodes every golden frame of testdata/protocol (as listed in vectors.json) with the Java codec,
 * compares every field with vectors.json, and re-encodes it byte for byte.
 */
class ProtocolGoldenTest {

    private static final UnpooledByteBufAllocator ALLOC = UnpooledByteBufAllocator.DEFAULT;

    static Path protocolDir() {
        String dir = System.getProperty("nearstream.testdata.dir", "../testdata");
        return Paths.get(dir, "protocol");
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> files() throws IOException {
        Map<String, Object> root =
                (Map<String, Object>)
                        Json.parse(
                                Files.readString(
                                        protocolDir().resolve("vectors.json"),
                                        StandardCharsets.UTF_8));
        assertThat(root.get("protocol_version")).isEqualTo(BigInteger.ONE);
        return (Map<String, Object>) root.get("files");
    }

    @Test
    void everyGoldenFileIsListed() throws IOException {
        List<String> bins;
        try (Stream<Path> s = Files.list(protocolDir())) {
            bins =
                    s.map(p -> p.getFileName().toString())
                            .filter(n -> n.endsWith(".bin"))
                            .collect(Collectors.toList());
        }
        assertThat(files().keySet()).containsExactlyInAnyOrderElementsOf(bins);
    }

    /** ReplicaCheck (17)'s golden frames, field by field (besides the generic check). */
    @Test
    void replicaCheckGoldenFrames() throws IOException {
        byte[] request = Files.readAllBytes(protocolDir().resolve("replica_check_request.bin"));
        DecodedRequest d = ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(request));
        assertThat(d.header().opcode()).isEqualTo(17);
        assertThat(d.header().knownOpcode()).isEqualTo(Opcode.REPLICA_CHECK);
        assertThat(d.header().requestId()).isEqualTo(0x8A8B8C8D8E8F8081L);
        assertThat(d.request())
                .isEqualTo(new ReplicaCheckRequest("golden.stream-1_x", 3, 0x01020304));
        ByteBuf encoded = ProtocolCodec.encodeRequest(ALLOC, 0x8A8B8C8D8E8F8081L, d.request());
        try {
            assertThat(ByteBufUtil.getBytes(encoded)).isEqualTo(request);
        } finally {
            encoded.release();
        }

        byte[] response = Files.readAllBytes(protocolDir().resolve("replica_check_response.bin"));
        ResponseFrame r = ProtocolCodec.decodeResponse(Unpooled.wrappedBuffer(response));
        assertThat(r.header().knownOpcode()).isEqualTo(Opcode.REPLICA_CHECK);
        assertThat(r.header().requestId()).isEqualTo(0x8A8B8C8D8E8F8081L);
        assertThat(r.ok()).isTrue();
        ReplicaCheckResponse v = ProtocolCodec.decodeReplicaCheckResponse(r.body());
        assertThat(v)
                .isEqualTo(
                        new ReplicaCheckResponse(
                                0x0102030405060708L,
                                List.of(
                                        new ReplicaCheckResponse.EpochStart(0, 0),
                                        new ReplicaCheckResponse.EpochStart(3, 0x100000002L)),
                                List.of(
                                        new ReplicaCheckResponse.SegmentExtent(1, 1, 0x00ABCDEF),
                                        new ReplicaCheckResponse.SegmentExtent(
                                                0x100000002L, 0x200000003L, 0))));
        ByteBuf again =
                ProtocolTestCodec.encodeResponse(
                        ALLOC,
                        Opcode.REPLICA_CHECK.code(),
                        0x8A8B8C8D8E8F8081L,
                        0,
                        "",
                        out -> ProtocolTestCodec.writeReplicaCheckResponse(out, v));
        try {
            assertThat(ByteBufUtil.getBytes(again)).isEqualTo(response);
        } finally {
            again.release();
        }
    }

    /** The part file the ReplicaTxn and ReplicaTxnFiles golden frames name. */
    private static final String GOLDEN_PART = "txn-00000000000000000007-00000000000000000003.seg";

    /**
     * The chunk of replica_txn_request.bin and replica_txn_files_response.bin, built by the Java
     * chunk writer: producer 0x1122334455667788, sequence 2, one record.
     */
    private static byte[] goldenReplicaTxnChunk() {
        return new ChunkBuilder()
                .add("in a replica".getBytes(StandardCharsets.UTF_8))
                .build(0x1122334455667788L, 2, 1_700_000_005_000L);
    }

    /** ReplicaTxn (18)'s golden frames, field by field (besides the generic check). */
    @Test
    void replicaTxnGoldenFrames() throws IOException {
        byte[] request = Files.readAllBytes(protocolDir().resolve("replica_txn_request.bin"));
        DecodedRequest d = ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(request));
        assertThat(d.header().opcode()).isEqualTo(18);
        assertThat(d.header().knownOpcode()).isEqualTo(Opcode.REPLICA_TXN);
        assertThat(d.header().requestId()).isEqualTo(0x9A9B9C9D9E9F9091L);
        ReplicaTxnRequest append = (ReplicaTxnRequest) d.request();
        assertThat(append)
                .isEqualTo(
                        new ReplicaTxnRequest(
                                "golden.stream-1_x",
                                3,
                                0x01020304,
                                0x0102030405060708L,
                                ReplicaTxnRequest.Op.APPEND,
                                GOLDEN_PART,
                                0x100000040L,
                                "",
                                goldenReplicaTxnChunk()));
        assertThat(append.data()).hasSize(64);
        assertEncodesTo(0x9A9B9C9D9E9F9091L, append, request);

        byte[] rename = Files.readAllBytes(protocolDir().resolve("replica_txn_rename_request.bin"));
        d = ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(rename));
        assertThat(d.header().knownOpcode()).isEqualTo(Opcode.REPLICA_TXN);
        assertThat(d.header().requestId()).isEqualTo(0xAAABACADAEAFA0A1L);
        assertThat(d.request())
                .isEqualTo(
                        new ReplicaTxnRequest(
                                "golden.stream-1_x",
                                3,
                                2,
                                9,
                                ReplicaTxnRequest.Op.RENAME,
                                GOLDEN_PART,
                                0,
                                "00000000000000000012-00000000000000000003.seg",
                                new byte[0]));
        assertEncodesTo(0xAAABACADAEAFA0A1L, d.request(), rename);

        byte[] response = Files.readAllBytes(protocolDir().resolve("replica_txn_response.bin"));
        ResponseFrame r = ProtocolCodec.decodeResponse(Unpooled.wrappedBuffer(response));
        assertThat(r.header().knownOpcode()).isEqualTo(Opcode.REPLICA_TXN);
        assertThat(r.header().requestId()).isEqualTo(0x9A9B9C9D9E9F9091L);
        assertThat(r.ok()).isTrue();
        ProtocolCodec.decodeEmpty(r.body(), "ReplicaTxn response");
        assertThat(response).hasSize(20);
    }

    /**
     * The op byte of a ReplicaTxn request (body offset 18 + n) takes 1 (append) to 4 (delete): each
     * decodes and re-encodes to the same bytes; any other value makes the body malformed.
     */
    @Test
    void replicaTxnOpOutsideOneToFourIsMalformed() throws IOException {
        byte[] request = Files.readAllBytes(protocolDir().resolve("replica_txn_request.bin"));
        int opAt =
                ProtocolCodec.LENGTH_BYTES
                        + ProtocolCodec.HEADER_BYTES
                        + 18
                        + "golden.stream-1_x".length();
        assertThat(request[opAt]).isEqualTo((byte) 1);
        for (ReplicaTxnRequest.Op op : ReplicaTxnRequest.Op.values()) {
            byte[] frame = request.clone();
            frame[opAt] = (byte) op.code();
            DecodedRequest d = ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(frame));
            assertThat(((ReplicaTxnRequest) d.request()).op()).isEqualTo(op);
            assertEncodesTo(0x9A9B9C9D9E9F9091L, d.request(), frame);
        }
        assertThat(ReplicaTxnRequest.Op.values())
                .extracting(ReplicaTxnRequest.Op::code)
                .containsExactly(1, 2, 3, 4);
        for (int code : new int[] {0, 5, 6, 0x7F, 0x80, 0xFF}) {
            byte[] frame = request.clone();
            frame[opAt] = (byte) code;
            assertThat(ReplicaTxnRequest.Op.fromCode(code)).isNull();
            assertThatThrownBy(() -> ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(frame)))
                    .as("op %s", code)
                    .isInstanceOf(NearstreamProtocolException.class)
                    .hasMessageContaining("op " + code)
                    .satisfies(
                            e ->
                                    assertThat(((NearstreamProtocolException) e).status())
                                            .isEqualTo(StatusCode.MALFORMED_REQUEST));
        }
    }

    /** ReplicaTxnFiles (19)'s golden frames, field by field (besides the generic check). */
    @Test
    void replicaTxnFilesGoldenFrames() throws IOException {
        byte[] request = Files.readAllBytes(protocolDir().resolve("replica_txn_files_request.bin"));
        DecodedRequest d = ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(request));
        assertThat(d.header().opcode()).isEqualTo(19);
        assertThat(d.header().knownOpcode()).isEqualTo(Opcode.REPLICA_TXN_FILES);
        assertThat(d.header().requestId()).isEqualTo(0xCACBCCCDCECFC0C1L);
        // A follower holding the first 0x100000040 bytes of the part asks for at most 4 MiB more.
        assertThat(d.request())
                .isEqualTo(
                        new ReplicaTxnFilesRequest(
                                "golden.stream-1_x",
                                3,
                                0x01020304,
                                0x00400000,
                                List.of(
                                        new ReplicaTxnFilesRequest.Held(
                                                GOLDEN_PART, 0x100000040L))));
        assertEncodesTo(0xCACBCCCDCECFC0C1L, d.request(), request);
        // 12-byte header, then (2 + 17) + 4 + 4 + 4 + 4 + (2 + 49 + 8) body bytes.
        assertThat(request).hasSize(4 + 12 + 19 + 16 + 2 + GOLDEN_PART.length() + 8);

        byte[] response =
                Files.readAllBytes(protocolDir().resolve("replica_txn_files_response.bin"));
        ResponseFrame r = ProtocolCodec.decodeResponse(Unpooled.wrappedBuffer(response));
        assertThat(r.header().knownOpcode()).isEqualTo(Opcode.REPLICA_TXN_FILES);
        assertThat(r.header().requestId()).isEqualTo(0xCACBCCCDCECFC0C1L);
        assertThat(r.ok()).isTrue();
        byte[] txnLog = new byte[32];
        for (int i = 0; i < txnLog.length; i++) {
            txnLog[i] = (byte) (0x10 + i);
        }
        byte[] chunk = goldenReplicaTxnChunk();
        // complete and count, then (Str name, u64 size, u64 offset, Blob data) a file.
        assertThat(r.body().readableBytes())
                .isEqualTo(
                        1
                                + 4
                                + (2 + 7 + 8 + 8 + 4 + txnLog.length)
                                + (2 + GOLDEN_PART.length() + 8 + 8 + 4 + chunk.length));
        ReplicaTxnFilesResponse v = ProtocolCodec.decodeReplicaTxnFilesResponse(r.body());
        // txn.log whole, from 0; the part from the 0x100000040 bytes the follower holds, to its
        // end.
        assertThat(v)
                .isEqualTo(
                        new ReplicaTxnFilesResponse(
                                true,
                                List.of(
                                        new ReplicaTxnFilesResponse.TxnFile(
                                                "txn.log", 32, 0, txnLog),
                                        new ReplicaTxnFilesResponse.TxnFile(
                                                GOLDEN_PART,
                                                0x100000040L + chunk.length,
                                                0x100000040L,
                                                chunk))));
        ByteBuf again =
                ProtocolTestCodec.encodeResponse(
                        ALLOC,
                        Opcode.REPLICA_TXN_FILES.code(),
                        0xCACBCCCDCECFC0C1L,
                        0,
                        "",
                        out -> ProtocolTestCodec.writeReplicaTxnFilesResponse(out, v));
        try {
            assertThat(ByteBufUtil.getBytes(again)).isEqualTo(response);
        } finally {
            again.release();
        }
    }

    /** ReplicaPublished (40)'s golden frames, field by field (besides the generic check). */
    @Test
    void replicaPublishedGoldenFrames() throws IOException {
        byte[] request = Files.readAllBytes(protocolDir().resolve("replica_published_request.bin"));
        DecodedRequest d = ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(request));
        assertThat(d.header().opcode()).isEqualTo(40);
        assertThat(d.header().knownOpcode()).isEqualTo(Opcode.REPLICA_PUBLISHED);
        assertThat(d.header().requestId()).isEqualTo(0x5061626364656667L);
        // A closed group of two segments, an open one whose first segment is being opened.
        List<ReplicaPublishedRequest.PublishedSegment> segments =
                List.of(
                        new ReplicaPublishedRequest.PublishedSegment(0x200000007L, 0x00800000),
                        new ReplicaPublishedRequest.PublishedSegment(0x200000009L, 0x1234));
        assertThat(d.request())
                .isEqualTo(
                        new ReplicaPublishedRequest(
                                "golden.stream-1_x",
                                258,
                                0x01020304,
                                0x0A0B0C0D0E0F1011L,
                                0x1000000020000001L,
                                0x1000000020000003L,
                                new Position(0x100000002L, 0x200000003L, 0),
                                List.of(
                                        new ReplicaPublishedRequest.PublishedGroup(
                                                0x100000005L, true, segments),
                                        new ReplicaPublishedRequest.PublishedGroup(
                                                0x100000006L, false, List.of()))));
        assertEncodesTo(0x5061626364656667L, d.request(), request);
        // 12-byte header, then (2 + 17) + 4 + 4 + 8 + 8 + 8 + 20 + 4 + Σ (13 + 12 × segments) body
        // bytes.
        assertThat(request).hasSize(4 + 12 + 19 + 56 + (13 + 2 * 12) + 13);

        byte[] response =
                Files.readAllBytes(protocolDir().resolve("replica_published_response.bin"));
        ResponseFrame r = ProtocolCodec.decodeResponse(Unpooled.wrappedBuffer(response));
        assertThat(r.header().knownOpcode()).isEqualTo(Opcode.REPLICA_PUBLISHED);
        assertThat(r.header().requestId()).isEqualTo(0x5061626364656667L);
        assertThat(r.ok()).isTrue();
        ProtocolCodec.decodeEmpty(r.body(), "ReplicaPublished response");
        assertThat(response).hasSize(20);
    }

    /**
     * Each group's closed byte of the ReplicaPublished golden request (group offset 8) is a bool: 0
     * and 1 decode and re-encode to the same bytes; any other value makes the body malformed.
     */
    @Test
    void replicaPublishedClosedOtherThanZeroOrOneIsMalformed() throws IOException {
        byte[] request = Files.readAllBytes(protocolDir().resolve("replica_published_request.bin"));
        int groupsAt =
                ProtocolCodec.LENGTH_BYTES
                        + ProtocolCodec.HEADER_BYTES
                        + 58
                        + "golden.stream-1_x".length();
        // The first group holds two segments, so the second starts 13 + 24 bytes on.
        int[] closedAt = {groupsAt + 8, groupsAt + 13 + 2 * 12 + 8};
        assertThat(request[closedAt[0]]).isEqualTo((byte) 1);
        assertThat(request[closedAt[1]]).isEqualTo((byte) 0);
        for (int g = 0; g < closedAt.length; g++) {
            for (int flag = 0; flag <= 1; flag++) {
                byte[] frame = request.clone();
                frame[closedAt[g]] = (byte) flag;
                DecodedRequest d = ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(frame));
                assertThat(((ReplicaPublishedRequest) d.request()).groups().get(g).closed())
                        .isEqualTo(flag == 1);
                assertEncodesTo(0x5061626364656667L, d.request(), frame);
            }
            for (int code : new int[] {2, 3, 0x7F, 0x80, 0xFF}) {
                byte[] frame = request.clone();
                frame[closedAt[g]] = (byte) code;
                assertThatThrownBy(
                                () ->
                                        ProtocolTestCodec.decodeRequest(
                                                Unpooled.wrappedBuffer(frame)))
                        .as("group %s, closed %s", g, code)
                        .isInstanceOf(NearstreamProtocolException.class)
                        .hasMessageContaining("closed is a bool but holds " + code)
                        .satisfies(
                                e ->
                                        assertThat(((NearstreamProtocolException) e).status())
                                                .isEqualTo(StatusCode.MALFORMED_REQUEST));
            }
        }
    }

    private static void assertEncodesTo(long requestId, Request request, byte[] frame) {
        ByteBuf encoded = ProtocolCodec.encodeRequest(ALLOC, requestId, request);
        try {
            assertThat(ByteBufUtil.getBytes(encoded)).isEqualTo(frame);
        } finally {
            encoded.release();
        }
    }

    /**
     * The transaction scope (docs/protocol.md, "Transactions (30–36)") in the golden frames, field
     * by field (besides the generic check): the broker scope and streamlet scopes.
     */
    @Test
    void txnScopeGoldenFrames() throws IOException {
        assertThat(((TxnRefRequest) goldenRequest("txn_begin_request.bin")).ref().scope())
                .isEqualTo(TxnRef.BROKER_SCOPE);
        assertThat(((TxnRefRequest) goldenRequest("txn_abort_request.bin")).ref())
                .isEqualTo(
                        new TxnRef(
                                "golden.stream-1_x",
                                "job-42.sink-ü",
                                7,
                                0x0102030405060708L,
                                0x01020304));
        assertThat(((TxnAppendRequest) goldenRequest("txn_append_request.bin")).ref().scope())
                .isEqualTo(TxnRef.BROKER_SCOPE);
        assertThat(((TxnInitRequest) goldenRequest("txn_init_request.bin")).scope())
                .isEqualTo(TxnRef.BROKER_SCOPE);
        assertThat(goldenRequest("txn_list_request.bin"))
                .isEqualTo(new TxnListRequest("golden.stream-1_x", "job-42.", TxnRef.BROKER_SCOPE));

        byte[] response = Files.readAllBytes(protocolDir().resolve("txn_list_response.bin"));
        ResponseFrame r = ProtocolCodec.decodeResponse(Unpooled.wrappedBuffer(response));
        assertThat(ProtocolCodec.decodeTxnListResponse(r.body()))
                .extracting(TransactionInfo::scope, TransactionInfo::streamlets)
                .containsExactly(tuple(3, 1), tuple(258, 1));
    }

    private static Request goldenRequest(String file) throws IOException {
        byte[] bytes = Files.readAllBytes(protocolDir().resolve(file));
        return ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(bytes)).request();
    }

    @TestFactory
    Stream<DynamicTest> goldenFiles() throws IOException {
        return files().entrySet().stream()
                .map(
                        e ->
                                DynamicTest.dynamicTest(
                                        e.getKey(), () -> check(e.getKey(), asMap(e.getValue()))));
    }

    private static void check(String file, Map<String, Object> expected) throws IOException {
        byte[] bytes = Files.readAllBytes(protocolDir().resolve(file));
        assertThat(u(bytes.length)).as("file_size").isEqualTo(expected.get("file_size"));
        switch ((String) expected.get("kind")) {
            case "chunk":
                checkChunk(bytes, expected);
                break;
            case "request":
                checkRequest(bytes, expected);
                break;
            case "response":
                checkResponse(bytes, expected);
                break;
            default:
                throw new AssertionError("unknown kind in " + file + ": " + expected.get("kind"));
        }
    }

    private static void checkChunk(byte[] bytes, Map<String, Object> expected) {
        Map<String, Object> actual = chunkJson(ByteBuffer.wrap(bytes), 0, bytes.length);
        Map<String, Object> want = new LinkedHashMap<>(expected);
        want.remove("kind");
        want.remove("file_size");
        assertThat(actual).isEqualTo(want);
    }

    private static void checkRequest(byte[] bytes, Map<String, Object> expected) {
        DecodedRequest decoded = ProtocolTestCodec.decodeRequest(Unpooled.wrappedBuffer(bytes));
        FrameHeader h = decoded.header();
        assertThat(frameJson(h)).isEqualTo(expected.get("frame"));
        assertThat(u(h.length() - ProtocolCodec.HEADER_BYTES))
                .isEqualTo(expected.get("body_length"));
        assertThat(requestJson(decoded.request())).isEqualTo(expected.get("body"));

        Request copy = detach(decoded.request());
        ByteBuf encoded = ProtocolCodec.encodeRequest(ALLOC, h.requestId(), copy);
        try {
            assertThat(ByteBufUtil.getBytes(encoded)).isEqualTo(bytes);
        } finally {
            encoded.release();
        }
    }

    private static void checkResponse(byte[] bytes, Map<String, Object> expected) {
        ResponseFrame r = ProtocolCodec.decodeResponse(Unpooled.wrappedBuffer(bytes));
        FrameHeader h = r.header();
        assertThat(frameJson(h)).isEqualTo(expected.get("frame"));
        assertThat(u(r.status())).as("status").isEqualTo(expected.get("status"));
        assertThat(r.statusCode().name()).isEqualTo(expected.get("status_name"));
        assertThat(r.message()).isEqualTo(expected.get("message"));
        assertThat(u(r.body().readableBytes())).isEqualTo(expected.get("body_length"));

        Opcode op = h.knownOpcode();
        Map<String, Object> body = new LinkedHashMap<>();
        Consumer<ByteBuf> writer = null;
        if (r.ok()) {
            ByteBuf in = r.body();
            switch (op) {
                case HANDSHAKE:
                    {
                        HandshakeResponse v = ProtocolCodec.decodeHandshakeResponse(in);
                        body.put("version", u(v.version()));
                        body.put("broker_epoch", u64(v.brokerEpoch()));
                        body.put("max_frame_bytes", BigInteger.valueOf(v.maxFrameBytes()));
                        body.put("broker_version", v.brokerVersion());
                        writer = out -> ProtocolTestCodec.writeHandshakeResponse(out, v);
                        break;
                    }
                case CREATE_STREAM:
                case DELETE_STREAM:
                    ProtocolCodec.decodeEmpty(in, op.wireName());
                    writer = out -> {};
                    break;
                case DESCRIBE_STREAM:
                    {
                        StreamConfig v = ProtocolCodec.decodeDescribeStreamResponse(in);
                        body = streamConfigJson(v);
                        writer = out -> ProtocolCodec.writeStreamConfig(out, v);
                        break;
                    }
                case LIST_STREAMS:
                    {
                        List<String> v = ProtocolCodec.decodeListStreamsResponse(in);
                        body.put("names", new ArrayList<Object>(v));
                        writer = out -> ProtocolTestCodec.writeListStreamsResponse(out, v);
                        break;
                    }
                case METADATA:
                    {
                        List<StreamletMetadata> v = ProtocolCodec.decodeMetadataResponse(in);
                        body.put("streamlets", list(v, ProtocolGoldenTest::streamletJson));
                        writer = out -> ProtocolTestCodec.writeMetadataResponse(out, v);
                        break;
                    }
                case APPEND:
                    {
                        List<AppendResult> v = ProtocolCodec.decodeAppendResponse(in);
                        body.put("results", list(v, ProtocolGoldenTest::appendResultJson));
                        writer = out -> ProtocolTestCodec.writeAppendResponse(out, v);
                        break;
                    }
                case FETCH:
                    {
                        List<StreamletFetch> v = ProtocolCodec.decodeFetchResponse(in);
                        body.put("results", list(v, ProtocolGoldenTest::fetchResultJson));
                        writer = out -> ProtocolTestCodec.writeFetchResponse(out, v);
                        break;
                    }
                case STATS:
                    {
                        Map<String, Long> v = ProtocolCodec.decodeStatsResponse(in);
                        List<Object> values = new ArrayList<>();
                        v.forEach(
                                (name, value) ->
                                        values.add(obj("name", name, "value", u64(value))));
                        body.put("values", values);
                        writer = out -> ProtocolTestCodec.writeStatsResponse(out, v);
                        break;
                    }
                case LOOKUP_TIMESTAMP:
                    {
                        List<TimestampLookup> v = ProtocolCodec.decodeLookupTimestampResponse(in);
                        body.put("results", list(v, ProtocolGoldenTest::lookupResultJson));
                        writer = out -> ProtocolTestCodec.writeLookupTimestampResponse(out, v);
                        break;
                    }
                case CLUSTER_METADATA:
                    {
                        ClusterMetadata v = ProtocolCodec.decodeClusterMetadataResponse(in);
                        body.put("broker_id", u32(v.brokerId()));
                        body.put(
                                "brokers",
                                list(
                                        v.brokers(),
                                        b ->
                                                obj(
                                                        "id", u32(b.id()),
                                                        "address", b.address(),
                                                        "host", b.host())));
                        body.put("streams", list(v.streams(), ProtocolGoldenTest::placementJson));
                        body.put("controller_id", u32(v.controllerId()));
                        writer = out -> ProtocolTestCodec.writeClusterMetadataResponse(out, v);
                        break;
                    }
                case MOVE_STREAMLET:
                case REPLICA_APPEND:
                case REPLICA_JOIN:
                case REPLICA_MOVE:
                case REPLICA_TXN:
                case REPLICA_PUBLISHED:
                    ProtocolCodec.decodeEmpty(in, op.wireName());
                    writer = out -> {};
                    break;
                case SEAL_STREAMLET:
                    {
                        Position v = ProtocolCodec.decodeSealStreamletResponse(in);
                        body.put("tail", positionJson(v));
                        writer = out -> ProtocolTestCodec.writeSealStreamletResponse(out, v);
                        break;
                    }
                case REPLICA_CHECK:
                    {
                        ReplicaCheckResponse v = ProtocolCodec.decodeReplicaCheckResponse(in);
                        body.put("leader_epoch", u64(v.leaderEpoch()));
                        body.put(
                                "epochs",
                                list(
                                        v.epochs(),
                                        e ->
                                                obj(
                                                        "epoch", u64(e.epoch()),
                                                        "start_group", u64(e.startGroup()))));
                        body.put(
                                "segments",
                                list(
                                        v.segments(),
                                        seg ->
                                                obj(
                                                        "group", u64(seg.group()),
                                                        "segment", u64(seg.segment()),
                                                        "bytes", u32(seg.bytes()))));
                        writer = out -> ProtocolTestCodec.writeReplicaCheckResponse(out, v);
                        break;
                    }
                case REPLICA_TXN_FILES:
                    {
                        ReplicaTxnFilesResponse v = ProtocolCodec.decodeReplicaTxnFilesResponse(in);
                        body.put("complete", v.complete());
                        body.put(
                                "files",
                                list(
                                        v.files(),
                                        f ->
                                                obj(
                                                        "name", f.name(),
                                                        "size", u64(f.size()),
                                                        "offset", u64(f.offset()),
                                                        "data", blobJson(f.data()))));
                        writer = out -> ProtocolTestCodec.writeReplicaTxnFilesResponse(out, v);
                        break;
                    }
                case PUSH_SUBSCRIBE:
                    {
                        PushSubscription v = ProtocolCodec.decodePushSubscribeResponse(in);
                        body.put("subscription_id", u64(v.subscriptionId()));
                        body.put("broker_epoch", u64(v.brokerEpoch()));
                        body.put("region_path", v.regionPath());
                        body.put("region_bytes", u64(v.regionBytes()));
                        writer = out -> ProtocolTestCodec.writePushSubscribeResponse(out, v);
                        break;
                    }
                case PUSH_UPDATE:
                case PUSH_CLOSE:
                case TXN_PREPARE:
                case TXN_COMMIT:
                case TXN_ABORT:
                    ProtocolCodec.decodeEmpty(in, op.wireName());
                    writer = out -> {};
                    break;
                case TXN_INIT:
                    {
                        TxnInitResult v = ProtocolCodec.decodeTxnInitResponse(in);
                        body.put("epoch", BigInteger.valueOf(v.epoch()));
                        body.put("last_serial", u64(v.lastSerial()));
                        writer = out -> ProtocolTestCodec.writeTxnInitResponse(out, v);
                        break;
                    }
                case TXN_BEGIN:
                    {
                        long serial = ProtocolCodec.decodeTxnBeginResponse(in);
                        body.put("serial", u64(serial));
                        writer = out -> ProtocolTestCodec.writeTxnBeginResponse(out, serial);
                        break;
                    }
                case TXN_APPEND:
                    {
                        List<AppendResult> v = ProtocolCodec.decodeAppendResponse(in, "TxnAppend");
                        body.put("results", list(v, ProtocolGoldenTest::appendResultJson));
                        writer = out -> ProtocolTestCodec.writeAppendResponse(out, v);
                        break;
                    }
                case TXN_LIST:
                    {
                        List<TransactionInfo> v = ProtocolCodec.decodeTxnListResponse(in);
                        body.put("transactions", list(v, ProtocolGoldenTest::transactionJson));
                        writer = out -> ProtocolTestCodec.writeTxnListResponse(out, v);
                        break;
                    }
                default:
                    throw new AssertionError("no response decoder for " + op);
            }
        }
        assertThat(body).isEqualTo(expected.get("body"));

        ByteBuf encoded =
                ProtocolTestCodec.encodeResponse(
                        ALLOC, h.opcode(), h.requestId(), r.status(), r.message(), writer);
        try {
            assertThat(ByteBufUtil.getBytes(encoded)).isEqualTo(bytes);
        } finally {
            encoded.release();
        }
    }

    /** A copy of {@code r} whose append chunks no longer point into the decoded frame. */
    private static Request detach(Request r) {
        if (r instanceof AppendRequest a) {
            return new AppendRequest(a.stream(), detach(a.entries()));
        }
        if (r instanceof TxnAppendRequest a) {
            return new TxnAppendRequest(a.ref(), detach(a.entries()));
        }
        if (r instanceof ReplicaAppendRequest a) {
            return new ReplicaAppendRequest(
                    a.stream(),
                    a.streamlet(),
                    a.leader(),
                    a.leaderEpoch(),
                    a.at(),
                    Unpooled.wrappedBuffer(ByteBufUtil.getBytes(a.chunk())));
        }
        return r;
    }

    private static List<AppendEntry> detach(List<AppendEntry> entries) {
        List<AppendEntry> copies = new ArrayList<>();
        for (AppendEntry e : entries) {
            copies.add(
                    new AppendEntry(
                            e.streamlet(),
                            Unpooled.wrappedBuffer(ByteBufUtil.getBytes(e.chunk()))));
        }
        return copies;
    }

    // ---- Java values as vectors.json writes them ----------------------------------------------

    private static Map<String, Object> frameJson(FrameHeader h) {
        Opcode op = h.knownOpcode();
        assertThat(op).as("opcode %s is known", h.opcode()).isNotNull();
        return obj(
                "length", u(h.length()),
                "version", u(h.version()),
                "flags", u(h.flags()),
                "opcode", u(h.opcode()),
                "opcode_name", op.wireName(),
                "request_id", u64(h.requestId()));
    }

    private static Map<String, Object> requestJson(Request request) {
        if (request instanceof HandshakeRequest r) {
            return obj(
                    "min_version", u(r.minVersion()),
                    "max_version", u(r.maxVersion()),
                    "client_name", r.clientName());
        } else if (request instanceof CreateStreamRequest r) {
            return streamConfigJson(r.config());
        } else if (request instanceof DeleteStreamRequest r) {
            return obj("name", r.name());
        } else if (request instanceof DescribeStreamRequest r) {
            return obj("name", r.name());
        } else if (request instanceof ListStreamsRequest || request instanceof StatsRequest) {
            return obj();
        } else if (request instanceof MetadataRequest r) {
            List<Object> streamlets = new ArrayList<>();
            for (int s : r.streamlets()) {
                streamlets.add(u32(s));
            }
            return obj("stream", r.stream(), "streamlets", streamlets);
        } else if (request instanceof AppendRequest r) {
            return obj("stream", r.stream(), "entries", appendEntriesJson(r.entries()));
        } else if (request instanceof TxnInitRequest r) {
            return obj(
                    "stream", r.stream(),
                    "transactional_id", r.transactionalId(),
                    "keep_prepared_through", u64(r.keepPreparedThrough()),
                    "scope", u32(r.scope()));
        } else if (request instanceof TxnRefRequest r) {
            return txnRefJson(r.ref());
        } else if (request instanceof TxnAppendRequest r) {
            Map<String, Object> json = txnRefJson(r.ref());
            json.put("entries", appendEntriesJson(r.entries()));
            return json;
        } else if (request instanceof TxnListRequest r) {
            return obj("stream", r.stream(), "id_prefix", r.idPrefix(), "scope", u32(r.scope()));
        } else if (request instanceof FetchRequest r) {
            return obj(
                    "stream",
                    r.stream(),
                    "max_wait_ms",
                    u32(r.maxWaitMs()),
                    "entries",
                    list(
                            r.entries(),
                            e ->
                                    obj(
                                            "streamlet", u32(e.streamlet()),
                                            "position", positionJson(e.position()),
                                            "max_bytes", u32(e.maxBytes()))));
        } else if (request instanceof LookupTimestampRequest r) {
            return obj(
                    "stream",
                    r.stream(),
                    "entries",
                    list(
                            r.queries(),
                            (TimestampQuery q) ->
                                    obj(
                                            "streamlet", u32(q.streamlet()),
                                            "timestamp_ms", BigInteger.valueOf(q.timestampMs()))));
        } else if (request instanceof ClusterMetadataRequest r) {
            return obj("streams", new ArrayList<Object>(r.streams()));
        } else if (request instanceof MoveStreamletRequest r) {
            return obj("stream", r.stream(), "streamlet", u32(r.streamlet()));
        } else if (request instanceof SealStreamletRequest r) {
            return obj(
                    "stream", r.stream(),
                    "streamlet", u32(r.streamlet()),
                    "seal_ms", u32(r.sealMs()));
        } else if (request instanceof ReplicaAppendRequest r) {
            ByteBuffer chunk = r.chunk().nioBuffer();
            return obj(
                    "stream", r.stream(),
                    "streamlet", u32(r.streamlet()),
                    "leader", u32(r.leader()),
                    "leader_epoch", u64(r.leaderEpoch()),
                    "at", positionJson(r.at()),
                    "chunk_size", u(chunk.remaining()),
                    "chunk", chunkJson(chunk, chunk.position(), chunk.remaining()));
        } else if (request instanceof ReplicaJoinRequest r) {
            return obj(
                    "stream", r.stream(),
                    "streamlet", u32(r.streamlet()),
                    "follower", u32(r.follower()),
                    "leader_epoch", u64(r.leaderEpoch()),
                    "tail", positionJson(r.tail()),
                    "take_over", u32(r.takeOver()));
        } else if (request instanceof ReplicaMoveRequest r) {
            return obj(
                    "stream", r.stream(),
                    "streamlet", u32(r.streamlet()),
                    "from", u32(r.from()));
        } else if (request instanceof ReplicaCheckRequest r) {
            return obj(
                    "stream", r.stream(),
                    "streamlet", u32(r.streamlet()),
                    "follower", u32(r.follower()));
        } else if (request instanceof ReplicaTxnRequest r) {
            return obj(
                    "stream", r.stream(),
                    "streamlet", u32(r.streamlet()),
                    "leader", u32(r.leader()),
                    "leader_epoch", u64(r.leaderEpoch()),
                    "op", r.op().name().toLowerCase(Locale.ROOT),
                    "file", r.file(),
                    "offset", u64(r.offset()),
                    "to", r.to(),
                    "data", blobJson(r.data()));
        } else if (request instanceof ReplicaTxnFilesRequest r) {
            return obj(
                    "stream",
                    r.stream(),
                    "streamlet",
                    u32(r.streamlet()),
                    "follower",
                    u32(r.follower()),
                    "max_bytes",
                    u32(r.maxBytes()),
                    "held",
                    list(r.held(), h -> obj("name", h.name(), "have", u64(h.have()))));
        } else if (request instanceof ReplicaPublishedRequest r) {
            return obj(
                    "stream", r.stream(),
                    "streamlet", u32(r.streamlet()),
                    "leader", u32(r.leader()),
                    "leader_epoch", u64(r.leaderEpoch()),
                    "since", u64(r.since()),
                    "version", u64(r.version()),
                    "head", positionJson(r.head()),
                    "groups", list(r.groups(), ProtocolGoldenTest::publishedGroupJson));
        } else if (request instanceof PushSubscribeRequest r) {
            return obj(
                    "stream", r.stream(),
                    "slots_per_ring", u32(r.slotsPerRing()),
                    "slot_bytes", u32(r.slotBytes()),
                    "consumer_timeout_ms", u32(r.consumerTimeoutMs()),
                    "rings", pushRingsJson(r.rings()),
                    "filter", recordFilterJson(r.filter()),
                    "slot_format", r.slotFormat() == SlotFormat.BINARY ? "binary" : "binary_view");
        } else if (request instanceof PushUpdateRequest r) {
            return obj(
                    "subscription_id", u64(r.subscriptionId()),
                    "rings", pushRingsJson(r.rings()));
        } else if (request instanceof PushCloseRequest r) {
            return obj("subscription_id", u64(r.subscriptionId()));
        }
        throw new AssertionError("no JSON form for " + request);
    }

    /** A PublishedGroup as vectors.json writes it: segment_count is implied by the list. */
    private static Map<String, Object> publishedGroupJson(
            ReplicaPublishedRequest.PublishedGroup g) {
        return obj(
                "id",
                u64(g.id()),
                "closed",
                g.closed(),
                "segments",
                list(
                        g.segments(),
                        seg -> obj("id", u64(seg.id()), "committed", u32(seg.committed()))));
    }

    /**
     * A Blob of ReplicaTxn or ReplicaTxnFiles as vectors.json writes it: a chunk (bytes that start
     * with the chunk magic) as its fields, after full validation; anything else as lower-case hex.
     */
    private static Object blobJson(byte[] data) {
        ByteBuffer b = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
        if (data.length >= Chunks.HEADER_BYTES && b.getInt(0) == Chunks.MAGIC) {
            return chunkJson(b, 0, data.length);
        }
        return HexFormat.of().formatHex(data);
    }

    private static List<Object> appendEntriesJson(List<AppendEntry> entries) {
        List<Object> json = new ArrayList<>();
        for (AppendEntry e : entries) {
            ByteBuffer chunk = e.chunk().nioBuffer();
            json.add(
                    obj(
                            "streamlet", u32(e.streamlet()),
                            "chunk_size", u(chunk.remaining()),
                            "chunk", chunkJson(chunk, chunk.position(), chunk.remaining())));
        }
        return json;
    }

    private static Map<String, Object> txnRefJson(TxnRef ref) {
        return obj(
                "stream", ref.stream(),
                "transactional_id", ref.transactionalId(),
                "epoch", BigInteger.valueOf(ref.epoch()),
                "serial", u64(ref.serial()),
                "scope", u32(ref.scope()));
    }

    private static Map<String, Object> transactionJson(TransactionInfo t) {
        return obj(
                "transactional_id", t.transactionalId(),
                "epoch", BigInteger.valueOf(t.epoch()),
                "serial", u64(t.serial()),
                "state", u(t.state().code()),
                "bytes", u64(t.bytes()),
                "chunks", u32(t.chunks()),
                "streamlets", u32(t.streamlets()),
                "started_ms", BigInteger.valueOf(t.startedMs()),
                "scope", u32(t.scope()));
    }

    /**
     * Rings as vectors.json writes them (field names follow the protocol's: ring_count and
     * split_count are implied by the lists).
     */
    private static Object recordFilterJson(RecordFilter f) {
        switch (f.kind()) {
            case JSON_FIELD_IN:
                return obj(
                        "kind",
                        "json_field_in",
                        "field",
                        f.field(),
                        "values",
                        new ArrayList<Object>(f.values()));
            case BYTES_CONTAIN:
                return obj("kind", "bytes_contain", "needle", HexFormat.of().formatHex(f.needle()));
            default:
                return obj("kind", "none");
        }
    }

    private static List<Object> pushRingsJson(List<PushRingSpec> rings) {
        return list(
                rings,
                ring ->
                        obj(
                                "subtask_index", u32(ring.subtaskIndex()),
                                "splits",
                                        list(
                                                ring.splits(),
                                                sp ->
                                                        obj(
                                                                "streamlet", u32(sp.streamlet()),
                                                                "start",
                                                                        positionJson(
                                                                                sp.start())))));
    }

    private static Map<String, Object> placementJson(StreamPlacement p) {
        return obj(
                "name", p.name(),
                "version", u32(p.version()),
                "owners", list(p.owners(), owner -> u32(owner)),
                "replicas", list(p.replicaSets(), ProtocolGoldenTest::replicaSetJson));
    }

    /** A ReplicaSet as vectors.json writes it: r and s are implied by the lists. */
    private static Map<String, Object> replicaSetJson(ReplicaSet rs) {
        return obj(
                "leader_epoch", u64(rs.leaderEpoch()),
                "replicas", list(rs.replicas(), id -> u32(id)),
                "isr", list(rs.isr(), id -> u32(id)));
    }

    private static Map<String, Object> streamConfigJson(StreamConfig c) {
        return obj(
                "name", c.name(),
                "streamlets", u32(c.streamlets()),
                "segment_bytes", u32(c.segmentBytes()),
                "segments_per_group", u32(c.segmentsPerGroup()),
                "active_groups", u32(c.activeGroups()),
                "durability", u(c.durability().ordinal()),
                "retention_bytes", BigInteger.valueOf(c.retentionBytes()),
                "retention_ms", BigInteger.valueOf(c.retentionMs()),
                "replication", u(c.replication()));
    }

    private static Map<String, Object> streamletJson(StreamletMetadata s) {
        return obj(
                "streamlet",
                u32(s.streamlet()),
                "head",
                positionJson(s.head()),
                "tail",
                positionJson(s.tail()),
                "groups",
                list(
                        s.groups(),
                        g ->
                                obj(
                                        "group_id", u64(g.groupId()),
                                        "closed", g.closed(),
                                        "first_segment", u64(g.firstSegment()),
                                        "segment_count", u32(g.segmentCount()),
                                        "bytes", u64(g.bytes()))));
    }

    private static Map<String, Object> appendResultJson(AppendResult r) {
        return obj(
                "streamlet", u32(r.streamlet()),
                "status", u(r.status().code()),
                "message", r.message(),
                "position", positionJson(r.position()),
                "duplicate", r.duplicate());
    }

    private static Map<String, Object> fetchResultJson(StreamletFetch r) {
        return obj(
                "streamlet",
                u32(r.streamlet()),
                "status",
                u(r.status().code()),
                "message",
                r.message(),
                "next",
                positionJson(r.next()),
                "tail",
                positionJson(r.tail()),
                "blocks",
                list(r.blocks(), ProtocolGoldenTest::blockJson));
    }

    private static Map<String, Object> blockJson(ChunkBlock block) {
        assertThat(block.data().isReadOnly()).isTrue();
        assertThat(block.data().order()).isEqualTo(ByteOrder.LITTLE_ENDIAN);
        List<Object> chunks = new ArrayList<>();
        ChunkCursor cursor = new ChunkCursor(block);
        ByteBuffer data = block.data();
        int previousEnd = 0;
        while (cursor.nextChunk()) {
            Position p = cursor.position();
            assertThat(p.group()).isEqualTo(block.at().group());
            assertThat(p.segment()).isEqualTo(block.at().segment());
            int rel = p.offset() - block.at().offset();
            assertThat(rel).isEqualTo(previousEnd);
            int size = cursor.header().totalSize();
            chunks.add(chunkJson(data, data.position() + rel, size));
            previousEnd = rel + size;
        }
        return obj(
                "at", positionJson(block.at()),
                "size", u(data.remaining()),
                "chunks", chunks);
    }

    private static Map<String, Object> lookupResultJson(TimestampLookup r) {
        return obj(
                "streamlet", u32(r.streamlet()),
                "status", u(r.status().code()),
                "message", r.message(),
                "position", positionJson(r.position()));
    }

    /** Header fields read raw, records read with a {@link ChunkCursor}, after full validation. */
    static Map<String, Object> chunkJson(ByteBuffer buf, int offset, int length) {
        ChunkHeader h = Chunks.validate(buf, offset, length);
        ByteBuffer b = buf.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer slice = b.duplicate();
        slice.limit(offset + length).position(offset);
        ChunkCursor cursor = new ChunkCursor().reset(new Position(1, 1, 0), slice);
        assertThat(cursor.nextChunk()).isTrue();
        assertThat(cursor.header()).isEqualTo(h);
        List<Object> records = new ArrayList<>();
        while (cursor.nextRecord()) {
            records.add(HexFormat.of().formatHex(cursor.copyRecord()));
        }
        assertThat(cursor.nextChunk()).isFalse();
        return obj(
                "size", u(length),
                "version", u(b.get(offset + 4) & 0xFF),
                "flags", u(b.get(offset + 5) & 0xFF),
                "header_length", u(b.getShort(offset + 6) & 0xFFFF),
                "payload_length", u32(h.payloadLength()),
                "payload_crc", u32(h.payloadCrc()),
                "producer_id", u64(h.producerId()),
                "sequence", u64(h.sequence()),
                "first_timestamp_ms", BigInteger.valueOf(h.firstTimestampMs()),
                "record_count", u32(h.recordCount()),
                "header_crc", u32(b.getInt(offset + 44)),
                "records_hex", records);
    }

    private static Map<String, Object> positionJson(Position p) {
        return obj("group", u64(p.group()), "segment", u64(p.segment()), "offset", u32(p.offset()));
    }

    // ---- helpers ------------------------------------------------------------------------------

    private static BigInteger u(int v) {
        return BigInteger.valueOf(v);
    }

    private static BigInteger u32(int v) {
        return BigInteger.valueOf(Integer.toUnsignedLong(v));
    }

    private static BigInteger u64(long v) {
        return new BigInteger(Long.toUnsignedString(v));
    }

    private static Map<String, Object> obj(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    private static <T> List<Object> list(List<T> items, java.util.function.Function<T, Object> f) {
        List<Object> out = new ArrayList<>();
        for (T t : items) {
            out.add(f.apply(t));
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> asMap(Object o) {
        return (Map<String, Object>) o;
    }
}
