package io.nearstream.client;

import static io.nearstream.client.ProtocolCodec.APPEND_ENTRY_BYTES;
import static io.nearstream.client.ProtocolCodec.VERSION;
import static io.nearstream.client.ProtocolCodec.beginFrame;
import static io.nearstream.client.ProtocolCodec.endFrame;
import static io.nearstream.client.ProtocolCodec.readHeader;
import static io.nearstream.client.ProtocolCodec.readStreamConfig;
import static io.nearstream.client.ProtocolCodec.writePosition;
import static io.nearstream.client.ProtocolCodec.writeReplicaSet;
import static io.nearstream.client.ProtocolCodec.writeStr;

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
import io.nearstream.client.ProtocolCodec.SealStreamletRequest;
import io.nearstream.client.ProtocolCodec.StatsRequest;
import io.nearstream.client.ProtocolCodec.TimestampQuery;
import io.nearstream.client.ProtocolCodec.TxnAppendRequest;
import io.nearstream.client.ProtocolCodec.TxnInitRequest;
import io.nearstream.client.ProtocolCodec.TxnListRequest;
import io.nearstream.client.ProtocolCodec.TxnRefRequest;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The broker's half of protocol version 1, for tests: decodes request frames and encodes response
 * frames, byte for byte as docs/protocol.md defines them. The client's half (encode requests,
 * decode responses) is {@link ProtocolCodec}, which ships in the client jar; this half is only for
 * the golden tests ({@code ProtocolGoldenTest}) and test brokers ({@code FakeBroker}), so it lives
 * in the test sources, in the same package for {@link ProtocolCodec}'s package-private pieces.
 * Decoders check every length and count against the bytes that remain and throw {@link
 * NearstreamProtocolException}, as {@link ProtocolCodec}'s do.
 */
final class ProtocolTestCodec {

    private static final int FETCH_ENTRY_BYTES = 4 + Position.WIRE_BYTES + 4;
    private static final int LOOKUP_QUERY_BYTES = 4 + 8;

    private ProtocolTestCodec() {}

    // ---- requests ---------------------------------------------------------------------------

    /** A decoded request frame. */
    record DecodedRequest(FrameHeader header, Request request) {}

    /**
     * Decodes a complete request frame (the broker's side; used by tests and test brokers). Append
     * and ReplicaAppend chunks are slices of {@code frame}, valid while it is.
     */
    static DecodedRequest decodeRequest(ByteBuf frame) {
        FrameHeader h = readHeader(frame);
        if (h.isResponse()) {
            throw NearstreamProtocolException.malformed(
                    "a response frame where a request was expected");
        }
        if (h.version() != VERSION) {
            throw new NearstreamProtocolException(
                    StatusCode.UNSUPPORTED_VERSION, "frame version " + h.version());
        }
        Opcode op = h.knownOpcode();
        if (op == null) {
            throw new NearstreamProtocolException(
                    StatusCode.UNKNOWN_OPCODE, "unknown opcode " + h.opcode());
        }
        WireReader in = new WireReader(frame, op.wireName() + " request");
        Request request;
        switch (op) {
            case HANDSHAKE:
                request =
                        new HandshakeRequest(
                                in.u16("min_version"),
                                in.u16("max_version"),
                                in.str("client_name"));
                break;
            case CREATE_STREAM:
                request = new CreateStreamRequest(readStreamConfig(in));
                break;
            case DELETE_STREAM:
                request = new DeleteStreamRequest(in.str("name"));
                break;
            case DESCRIBE_STREAM:
                request = new DescribeStreamRequest(in.str("name"));
                break;
            case LIST_STREAMS:
                request = new ListStreamsRequest();
                break;
            case METADATA:
                {
                    String stream = in.str("stream");
                    int[] streamlets = new int[in.count("count", 4)];
                    for (int i = 0; i < streamlets.length; i++) {
                        streamlets[i] = in.u32("streamlets");
                    }
                    request = new MetadataRequest(stream, streamlets);
                    break;
                }
            case APPEND:
                {
                    String stream = in.str("stream");
                    request = new AppendRequest(stream, readAppendEntries(in, frame));
                    break;
                }
            case FETCH:
                {
                    String stream = in.str("stream");
                    int maxWait = in.u32("max_wait_ms");
                    int n = in.count("count", FETCH_ENTRY_BYTES);
                    List<FetchEntry> entries = new ArrayList<>(n);
                    for (int i = 0; i < n; i++) {
                        entries.add(
                                new FetchEntry(
                                        in.u32("streamlet"),
                                        in.position("position"),
                                        in.u32("max_bytes")));
                    }
                    request = new FetchRequest(stream, maxWait, entries);
                    break;
                }
            case STATS:
                request = new StatsRequest();
                break;
            case LOOKUP_TIMESTAMP:
                {
                    String stream = in.str("stream");
                    int n = in.count("count", LOOKUP_QUERY_BYTES);
                    List<TimestampQuery> queries = new ArrayList<>(n);
                    for (int i = 0; i < n; i++) {
                        queries.add(
                                new TimestampQuery(in.u32("streamlet"), in.i64("timestamp_ms")));
                    }
                    request = new LookupTimestampRequest(stream, queries);
                    break;
                }
            case CLUSTER_METADATA:
                {
                    int n = in.count("count", 2);
                    List<String> streams = new ArrayList<>(n);
                    for (int i = 0; i < n; i++) {
                        streams.add(in.str("streams"));
                    }
                    request = new ClusterMetadataRequest(streams);
                    break;
                }
            case MOVE_STREAMLET:
                request = new MoveStreamletRequest(in.str("stream"), in.u32("streamlet"));
                break;
            case SEAL_STREAMLET:
                request =
                        new SealStreamletRequest(
                                in.str("stream"), in.u32("streamlet"), in.u32("seal_ms"));
                break;
            case REPLICA_APPEND:
                {
                    String stream = in.str("stream");
                    int streamlet = in.u32("streamlet");
                    int leader = in.u32("leader");
                    long leaderEpoch = in.u64("leader_epoch");
                    Position at = in.position("at");
                    int index = in.blob("chunk");
                    request =
                            new ReplicaAppendRequest(
                                    stream,
                                    streamlet,
                                    leader,
                                    leaderEpoch,
                                    at,
                                    frame.slice(index, in.lastLength()));
                    break;
                }
            case REPLICA_JOIN:
                request =
                        new ReplicaJoinRequest(
                                in.str("stream"),
                                in.u32("streamlet"),
                                in.u32("follower"),
                                in.u64("leader_epoch"),
                                in.position("tail"),
                                in.u8("take_over"));
                break;
            case REPLICA_MOVE:
                request =
                        new ReplicaMoveRequest(
                                in.str("stream"), in.u32("streamlet"), in.u32("from"));
                break;
            case REPLICA_CHECK:
                request =
                        new ReplicaCheckRequest(
                                in.str("stream"), in.u32("streamlet"), in.u32("follower"));
                break;
            case REPLICA_TXN:
                request = readReplicaTxnRequest(in);
                break;
            case REPLICA_TXN_FILES:
                {
                    String stream = in.str("stream");
                    int streamlet = in.u32("streamlet");
                    int follower = in.u32("follower");
                    int maxBytes = in.u32("max_bytes");
                    // An empty name and its u64 at least.
                    int n = in.count("count", 2 + 8);
                    List<ReplicaTxnFilesRequest.Held> held = new ArrayList<>(n);
                    for (int i = 0; i < n; i++) {
                        held.add(new ReplicaTxnFilesRequest.Held(in.str("name"), in.u64("have")));
                    }
                    request =
                            new ReplicaTxnFilesRequest(stream, streamlet, follower, maxBytes, held);
                    break;
                }
            case REPLICA_PUBLISHED:
                request = readReplicaPublishedRequest(in);
                break;
            case PUSH_SUBSCRIBE:
                request =
                        new PushSubscribeRequest(
                                in.str("stream"),
                                in.u32("slots_per_ring"),
                                in.u32("slot_bytes"),
                                in.u32("consumer_timeout_ms"),
                                readPushRings(in),
                                readRecordFilter(in),
                                readSlotFormat(in),
                                (h.flags() & ProtocolCodec.FLAG_REPLICA_READ) != 0);
                break;
            case PUSH_UPDATE:
                request = new PushUpdateRequest(in.u64("subscription_id"), readPushRings(in));
                break;
            case PUSH_CLOSE:
                request = new PushCloseRequest(in.u64("subscription_id"));
                break;
            case TXN_INIT:
                request =
                        new TxnInitRequest(
                                in.str("stream"),
                                in.str("transactional_id"),
                                in.u64("keep_prepared_through"),
                                in.u32("scope"));
                break;
            case TXN_BEGIN:
            case TXN_PREPARE:
            case TXN_COMMIT:
            case TXN_ABORT:
                request = new TxnRefRequest(op, readTxnRef(in));
                break;
            case TXN_APPEND:
                {
                    TxnRef ref = readTxnRef(in);
                    request = new TxnAppendRequest(ref, readAppendEntries(in, frame));
                    break;
                }
            case TXN_LIST:
                request =
                        new TxnListRequest(in.str("stream"), in.str("id_prefix"), in.u32("scope"));
                break;
            default:
                throw new AssertionError(op);
        }
        in.end();
        return new DecodedRequest(h, request);
    }

    /** Append's and TxnAppend's entries; the chunks are slices of {@code frame}. */
    private static List<AppendEntry> readAppendEntries(WireReader in, ByteBuf frame) {
        int n = in.count("count", APPEND_ENTRY_BYTES);
        List<AppendEntry> entries = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            int streamlet = in.u32("streamlet");
            int index = in.blob("chunk");
            entries.add(new AppendEntry(streamlet, frame.slice(index, in.lastLength())));
        }
        return entries;
    }

    /** ReplicaTxn's body; an op outside 1 to 4 is malformed. The data is a copy. */
    private static ReplicaTxnRequest readReplicaTxnRequest(WireReader in) {
        String stream = in.str("stream");
        int streamlet = in.u32("streamlet");
        int leader = in.u32("leader");
        long leaderEpoch = in.u64("leader_epoch");
        int code = in.u8("op");
        ReplicaTxnRequest.Op op = ReplicaTxnRequest.Op.fromCode(code);
        if (op == null) {
            throw NearstreamProtocolException.malformed(
                    "ReplicaTxn request: op "
                            + code
                            + " is not 1 (append), 2 (replace), 3 (rename) or 4 (delete)");
        }
        String file = in.str("file");
        long offset = in.u64("offset");
        String to = in.str("to");
        int index = in.blob("data");
        byte[] data = new byte[in.lastLength()];
        in.buffer().getBytes(index, data);
        return new ReplicaTxnRequest(
                stream, streamlet, leader, leaderEpoch, op, file, offset, to, data);
    }

    /** ReplicaPublished's body; a group's closed byte other than 0 or 1 is malformed. */
    private static ReplicaPublishedRequest readReplicaPublishedRequest(WireReader in) {
        String stream = in.str("stream");
        int streamlet = in.u32("streamlet");
        int leader = in.u32("leader");
        long leaderEpoch = in.u64("leader_epoch");
        long since = in.u64("since");
        long version = in.u64("version");
        Position head = in.position("head");
        // A group without segments: id, closed, segment_count.
        int n = in.count("group_count", 8 + 1 + 4);
        List<ReplicaPublishedRequest.PublishedGroup> groups = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            long id = in.u64("id");
            boolean closed = in.bool("closed");
            int k = in.count("segment_count", 8 + 4);
            List<ReplicaPublishedRequest.PublishedSegment> segments = new ArrayList<>(k);
            for (int j = 0; j < k; j++) {
                segments.add(
                        new ReplicaPublishedRequest.PublishedSegment(
                                in.u64("segment"), in.u32("committed")));
            }
            groups.add(new ReplicaPublishedRequest.PublishedGroup(id, closed, segments));
        }
        return new ReplicaPublishedRequest(
                stream, streamlet, leader, leaderEpoch, since, version, head, groups);
    }

    static TxnRef readTxnRef(WireReader in) {
        return new TxnRef(
                in.str("stream"),
                in.str("transactional_id"),
                Integer.toUnsignedLong(in.u32("epoch")),
                in.u64("serial"),
                in.u32("scope"));
    }

    /** A filter whose fields break its bounds is a malformed body here, as for any field. */
    static RecordFilter readRecordFilter(WireReader in) {
        try {
            return readRecordFilterFields(in);
        } catch (IllegalArgumentException e) {
            throw NearstreamProtocolException.malformed(e.getMessage());
        }
    }

    private static RecordFilter readRecordFilterFields(WireReader in) {
        int kind = in.u8("filter kind");
        switch (kind) {
            case 0:
                return RecordFilter.none();
            case 1:
                {
                    String field = in.str("field");
                    int n = in.count("value count", 2);
                    List<String> values = new ArrayList<>(n);
                    for (int i = 0; i < n; i++) {
                        values.add(in.str("value"));
                    }
                    return RecordFilter.jsonFieldIn(field, values);
                }
            case 2:
                {
                    int index = in.blob("needle");
                    byte[] needle = new byte[in.lastLength()];
                    in.buffer().getBytes(index, needle);
                    return RecordFilter.bytesContain(needle);
                }
            default:
                throw NearstreamProtocolException.malformed("unknown record filter kind " + kind);
        }
    }

    static SlotFormat readSlotFormat(WireReader in) {
        int code = in.u8("slot_format");
        try {
            return SlotFormat.fromCode(code);
        } catch (IllegalArgumentException e) {
            throw NearstreamProtocolException.malformed("unknown slot format " + code);
        }
    }

    static List<PushRingSpec> readPushRings(WireReader in) {
        int n = in.count("ring_count", 8);
        List<PushRingSpec> rings = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            int subtask = in.u32("subtask_index");
            int m = in.count("split_count", PushSplitStart.WIRE_BYTES);
            List<PushSplitStart> splits = new ArrayList<>(m);
            for (int j = 0; j < m; j++) {
                splits.add(new PushSplitStart(in.u32("streamlet"), in.position("start")));
            }
            rings.add(new PushRingSpec(subtask, splits));
        }
        return rings;
    }

    // ---- responses --------------------------------------------------------------------------

    /** Encodes a complete response frame; {@code body} writes the body (not called unless OK). */
    static ByteBuf encodeResponse(
            ByteBufAllocator alloc,
            int opcode,
            long requestId,
            int status,
            String message,
            Consumer<ByteBuf> body) {
        ByteBuf out = alloc.heapBuffer(64);
        try {
            int start = beginFrame(out, opcode, requestId, true);
            out.writeShortLE(status);
            writeStr(out, message);
            if (status == 0 && body != null) {
                body.accept(out);
            }
            endFrame(out, start);
            return out;
        } catch (RuntimeException e) {
            out.release();
            throw e;
        }
    }

    static void writeHandshakeResponse(ByteBuf out, HandshakeResponse r) {
        out.writeShortLE(r.version());
        out.writeLongLE(r.brokerEpoch());
        out.writeIntLE((int) r.maxFrameBytes());
        writeStr(out, r.brokerVersion());
    }

    static void writeListStreamsResponse(ByteBuf out, List<String> names) {
        out.writeIntLE(names.size());
        for (String name : names) {
            writeStr(out, name);
        }
    }

    static void writeMetadataResponse(ByteBuf out, List<StreamletMetadata> streamlets) {
        out.writeIntLE(streamlets.size());
        for (StreamletMetadata s : streamlets) {
            out.writeIntLE(s.streamlet());
            writePosition(out, s.head());
            writePosition(out, s.tail());
            out.writeIntLE(s.groups().size());
            for (GroupMetadata g : s.groups()) {
                out.writeLongLE(g.groupId());
                out.writeByte(g.closed() ? 1 : 0);
                out.writeLongLE(g.firstSegment());
                out.writeIntLE(g.segmentCount());
                out.writeLongLE(g.bytes());
            }
        }
    }

    static void writeAppendResponse(ByteBuf out, List<AppendResult> results) {
        out.writeIntLE(results.size());
        for (AppendResult r : results) {
            out.writeIntLE(r.streamlet());
            out.writeShortLE(r.status().code());
            writeStr(out, r.message());
            writePosition(out, r.position());
            out.writeByte(r.duplicate() ? 1 : 0);
        }
    }

    static void writeFetchResponse(ByteBuf out, List<StreamletFetch> results) {
        out.writeIntLE(results.size());
        for (StreamletFetch r : results) {
            out.writeIntLE(r.streamlet());
            out.writeShortLE(r.status().code());
            writeStr(out, r.message());
            writePosition(out, r.next());
            writePosition(out, r.tail());
            out.writeIntLE(r.blocks().size());
            for (ChunkBlock block : r.blocks()) {
                writePosition(out, block.at());
                out.writeIntLE(block.data().remaining());
                out.writeBytes(block.data().duplicate());
            }
        }
    }

    static void writeStatsResponse(ByteBuf out, Map<String, Long> values) {
        out.writeIntLE(values.size());
        for (Map.Entry<String, Long> e : values.entrySet()) {
            writeStr(out, e.getKey());
            out.writeLongLE(e.getValue());
        }
    }

    static void writeLookupTimestampResponse(ByteBuf out, List<TimestampLookup> results) {
        out.writeIntLE(results.size());
        for (TimestampLookup r : results) {
            out.writeIntLE(r.streamlet());
            out.writeShortLE(r.status().code());
            writeStr(out, r.message());
            writePosition(out, r.position());
        }
    }

    static void writeClusterMetadataResponse(ByteBuf out, ClusterMetadata m) {
        out.writeIntLE(m.brokerId());
        out.writeIntLE(m.brokers().size());
        for (BrokerInfo b : m.brokers()) {
            out.writeIntLE(b.id());
            writeStr(out, b.address());
            writeStr(out, b.host());
        }
        out.writeIntLE(m.streams().size());
        for (StreamPlacement p : m.streams()) {
            writeStr(out, p.name());
            out.writeIntLE(p.version());
            out.writeIntLE(p.owners().size());
            for (int owner : p.owners()) {
                out.writeIntLE(owner);
            }
            for (ReplicaSet rs : p.replicaSets()) {
                writeReplicaSet(out, rs);
            }
        }
        out.writeIntLE(m.controllerId());
    }

    static void writeSealStreamletResponse(ByteBuf out, Position tail) {
        writePosition(out, tail);
    }

    static void writeReplicaCheckResponse(ByteBuf out, ReplicaCheckResponse r) {
        out.writeLongLE(r.leaderEpoch());
        out.writeIntLE(r.epochs().size());
        for (ReplicaCheckResponse.EpochStart e : r.epochs()) {
            out.writeLongLE(e.epoch());
            out.writeLongLE(e.startGroup());
        }
        out.writeIntLE(r.segments().size());
        for (ReplicaCheckResponse.SegmentExtent seg : r.segments()) {
            out.writeLongLE(seg.group());
            out.writeLongLE(seg.segment());
            out.writeIntLE(seg.bytes());
        }
    }

    static void writeReplicaTxnFilesResponse(ByteBuf out, ReplicaTxnFilesResponse r) {
        out.writeByte(r.complete() ? 1 : 0);
        out.writeIntLE(r.files().size());
        for (ReplicaTxnFilesResponse.TxnFile f : r.files()) {
            writeStr(out, f.name());
            out.writeLongLE(f.size());
            out.writeLongLE(f.offset());
            out.writeIntLE(f.data().length);
            out.writeBytes(f.data());
        }
    }

    static void writePushSubscribeResponse(ByteBuf out, PushSubscription r) {
        out.writeLongLE(r.subscriptionId());
        out.writeLongLE(r.brokerEpoch());
        writeStr(out, r.regionPath());
        out.writeLongLE(r.regionBytes());
    }

    static void writeTxnInitResponse(ByteBuf out, TxnInitResult r) {
        out.writeIntLE((int) r.epoch());
        out.writeLongLE(r.lastSerial());
    }

    static void writeTxnBeginResponse(ByteBuf out, long serial) {
        out.writeLongLE(serial);
    }

    static void writeTxnListResponse(ByteBuf out, List<TransactionInfo> transactions) {
        out.writeIntLE(transactions.size());
        for (TransactionInfo t : transactions) {
            writeStr(out, t.transactionalId());
            out.writeIntLE((int) t.epoch());
            out.writeLongLE(t.serial());
            out.writeByte(t.state().code());
            out.writeLongLE(t.bytes());
            out.writeIntLE(t.chunks());
            out.writeIntLE(t.streamlets());
            out.writeLongLE(t.startedMs());
            out.writeIntLE(t.scope());
        }
    }
}
