package io.nearstream.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * The client's half of protocol version 1, byte for byte as docs/protocol.md defines it: encodes
 * request frames and decodes response frames. (The broker's half, which the golden tests and test
 * brokers need, is {@code ProtocolTestCodec} in the test sources.) Decoders check every length and
 * count against the bytes that remain and throw {@link NearstreamProtocolException}; encoders throw
 * {@link IllegalArgumentException} for values the protocol cannot carry.
 */
final class ProtocolCodec {

    static final int VERSION = 1;

    /** The {@code u32} length prefix. */
    static final int LENGTH_BYTES = 4;

    /** version, flags, opcode, request id. */
    static final int HEADER_BYTES = 12;

    static final int FLAG_RESPONSE = 0x01;

    /**
     * Requests only: a Fetch or PushSubscribe that an in-sync follower of the streamlets may serve
     * from its own copy instead of answering NOT_OWNER (docs/protocol.md, frame flags).
     */
    static final int FLAG_REPLICA_READ = 0x04;

    static final int MAX_STR_BYTES = 0xFFFF;

    private static final int METADATA_STREAMLET_BYTES = 4 + 2 * Position.WIRE_BYTES + 4;
    private static final int GROUP_BYTES = 29;
    static final int APPEND_ENTRY_BYTES = 8;
    private static final int APPEND_RESULT_BYTES = 4 + 2 + 2 + Position.WIRE_BYTES + 1;
    private static final int FETCH_RESULT_BYTES = 4 + 2 + 2 + 2 * Position.WIRE_BYTES + 4;
    private static final int FETCH_BLOCK_BYTES = Position.WIRE_BYTES + 4;
    private static final int STAT_BYTES = 2 + 8;
    private static final int LOOKUP_RESULT_BYTES = 4 + 2 + 2 + Position.WIRE_BYTES;
    private static final int TXN_INFO_BYTES = 2 + 4 + 8 + 1 + 8 + 4 + 4 + 8 + 4;
    private static final int BROKER_INFO_BYTES = 4 + 2 + 2;
    private static final int STREAM_PLACEMENT_BYTES = 2 + 4 + 4;

    /** An owner (u32) and the smallest ReplicaSet: leader_epoch, r, s (10 + 4 × (r + s) bytes). */
    private static final int STREAMLET_PLACEMENT_BYTES = 4 + 8 + 1 + 1;

    /** ReplicaAppend's fields after the stream name: streamlet, leader, epoch, at, chunk length. */
    static final int REPLICA_APPEND_FIXED_BYTES = 4 + 4 + 8 + Position.WIRE_BYTES + 4;

    /** ReplicaCheck response entries: (epoch, start_group) and (group, segment, bytes). */
    private static final int REPLICA_CHECK_EPOCH_BYTES = 8 + 8;

    private static final int REPLICA_CHECK_SEGMENT_BYTES = 8 + 8 + 4;

    /**
     * A ReplicaTxnFiles response entry at its smallest: an empty name, its size and offset and an
     * empty blob.
     */
    private static final int REPLICA_TXN_FILE_BYTES = 2 + 8 + 8 + 4;

    private ProtocolCodec() {}

    // ---- frames -----------------------------------------------------------------------------

    /** The length prefix and 12-byte header of a frame. */
    record FrameHeader(int length, int version, int flags, int opcode, long requestId) {
        boolean isResponse() {
            return (flags & FLAG_RESPONSE) != 0;
        }

        /** The opcode, or {@code null} when this client does not know it. */
        Opcode knownOpcode() {
            return Opcode.fromCode(opcode);
        }
    }

    /**
     * Reads the prefix and header of one complete frame: {@code frame} holds exactly the frame, its
     * reader index at the length prefix. Leaves the reader index at the body (or, for a response,
     * at the status).
     */
    static FrameHeader readHeader(ByteBuf frame) {
        if (frame.readableBytes() < LENGTH_BYTES + HEADER_BYTES) {
            throw NearstreamProtocolException.malformed(
                    "frame of "
                            + frame.readableBytes()
                            + " bytes is shorter than its 16-byte prefix and header");
        }
        long length = frame.readUnsignedIntLE();
        if (length != frame.readableBytes()) {
            throw NearstreamProtocolException.malformed(
                    "frame length field says "
                            + length
                            + " bytes but the frame holds "
                            + frame.readableBytes());
        }
        int version = frame.readUnsignedByte();
        int flags = frame.readUnsignedByte();
        int opcode = frame.readUnsignedShortLE();
        long requestId = frame.readLongLE();
        return new FrameHeader((int) length, version, flags, opcode, requestId);
    }

    /**
     * Writes a placeholder length and the header; returns the prefix's index for {@link #endFrame}.
     */
    static int beginFrame(ByteBuf out, int opcode, long requestId, boolean response) {
        return beginFrame(out, opcode, requestId, response ? FLAG_RESPONSE : 0);
    }

    /** {@link #beginFrame(ByteBuf, int, long, boolean)} with the header's {@code flags} byte. */
    static int beginFrame(ByteBuf out, int opcode, long requestId, int flags) {
        int start = out.writerIndex();
        out.writeIntLE(0);
        out.writeByte(VERSION);
        out.writeByte(flags);
        out.writeShortLE(opcode);
        out.writeLongLE(requestId);
        return start;
    }

    /** Patches the length prefix written by {@link #beginFrame}. */
    static void endFrame(ByteBuf out, int start) {
        out.setIntLE(start, out.writerIndex() - start - LENGTH_BYTES);
    }

    // ---- requests ---------------------------------------------------------------------------

    /** A request body of one opcode. */
    sealed interface Request
            permits HandshakeRequest,
                    CreateStreamRequest,
                    DeleteStreamRequest,
                    DescribeStreamRequest,
                    ListStreamsRequest,
                    MetadataRequest,
                    AppendRequest,
                    FetchRequest,
                    StatsRequest,
                    LookupTimestampRequest,
                    ClusterMetadataRequest,
                    MoveStreamletRequest,
                    SealStreamletRequest,
                    ReplicaAppendRequest,
                    ReplicaJoinRequest,
                    ReplicaMoveRequest,
                    ReplicaCheckRequest,
                    ReplicaTxnRequest,
                    ReplicaTxnFilesRequest,
                    ReplicaPublishedRequest,
                    PushSubscribeRequest,
                    PushUpdateRequest,
                    PushCloseRequest,
                    TxnInitRequest,
                    TxnRefRequest,
                    TxnAppendRequest,
                    TxnListRequest {
        Opcode opcode();

        /** The frame header's flags: none, unless the request says otherwise. */
        default int flags() {
            return 0;
        }
    }

    /** Handshake (1): the client's version range and name. */
    record HandshakeRequest(int minVersion, int maxVersion, String clientName) implements Request {
        @Override
        public Opcode opcode() {
            return Opcode.HANDSHAKE;
        }
    }

    /** CreateStream (2). */
    record CreateStreamRequest(StreamConfig config) implements Request {
        @Override
        public Opcode opcode() {
            return Opcode.CREATE_STREAM;
        }
    }

    /** DeleteStream (3). */
    record DeleteStreamRequest(String name) implements Request {
        @Override
        public Opcode opcode() {
            return Opcode.DELETE_STREAM;
        }
    }

    /** DescribeStream (4). */
    record DescribeStreamRequest(String name) implements Request {
        @Override
        public Opcode opcode() {
            return Opcode.DESCRIBE_STREAM;
        }
    }

    /** ListStreams (5): empty body. */
    record ListStreamsRequest() implements Request {
        @Override
        public Opcode opcode() {
            return Opcode.LIST_STREAMS;
        }
    }

    /** Metadata (6); an empty {@code streamlets} asks for all of them. */
    record MetadataRequest(String stream, int[] streamlets) implements Request {
        @Override
        public Opcode opcode() {
            return Opcode.METADATA;
        }
    }

    /** One chunk for one streamlet; the buffer's readable bytes are the chunk. */
    record AppendEntry(int streamlet, ByteBuf chunk) {}

    /**
     * Encoding takes ownership of the entries' chunk buffers (they are released with the frame).
     */
    record AppendRequest(String stream, List<AppendEntry> entries) implements Request {
        @Override
        public Opcode opcode() {
            return Opcode.APPEND;
        }
    }

    /**
     * Fetch (8); {@code replicaRead} sets the frame's {@link #FLAG_REPLICA_READ}, so that a broker
     * following the entries' streamlets in sync may answer from its own copy.
     */
    record FetchRequest(String stream, int maxWaitMs, List<FetchEntry> entries, boolean replicaRead)
            implements Request {
        /** Served by the streamlets' leader only. */
        FetchRequest(String stream, int maxWaitMs, List<FetchEntry> entries) {
            this(stream, maxWaitMs, entries, false);
        }

        @Override
        public Opcode opcode() {
            return Opcode.FETCH;
        }

        @Override
        public int flags() {
            return replicaRead ? FLAG_REPLICA_READ : 0;
        }
    }

    /** Stats (9): empty body. */
    record StatsRequest() implements Request {
        @Override
        public Opcode opcode() {
            return Opcode.STATS;
        }
    }

    /** One entry of a LookupTimestamp request. */
    record TimestampQuery(int streamlet, long timestampMs) {}

    /** LookupTimestamp (10). */
    record LookupTimestampRequest(String stream, List<TimestampQuery> queries) implements Request {
        @Override
        public Opcode opcode() {
            return Opcode.LOOKUP_TIMESTAMP;
        }
    }

    /** ClusterMetadata (11); an empty {@code streams} asks for every stream. */
    record ClusterMetadataRequest(List<String> streams) implements Request {
        public ClusterMetadataRequest {
            streams = List.copyOf(streams);
        }

        @Override
        public Opcode opcode() {
            return Opcode.CLUSTER_METADATA;
        }
    }

    /** MoveStreamlet (12): sent to the broker that is to own the streamlet (a StreamletRef). */
    record MoveStreamletRequest(String stream, int streamlet) implements Request {
        @Override
        public Opcode opcode() {
            return Opcode.MOVE_STREAMLET;
        }
    }

    /**
     * SealStreamlet (13), broker to broker during a move; {@code sealMs} is a {@code u32}, 0 lifts
     * the seal.
     */
    record SealStreamletRequest(String stream, int streamlet, int sealMs) implements Request {
        @Override
        public Opcode opcode() {
            return Opcode.SEAL_STREAMLET;
        }
    }

    /**
     * ReplicaAppend (14), broker to broker: a streamlet's leader sends a follower one chunk it
     * stored at {@code at}. {@code streamlet} and {@code leader} are {@code u32}s, {@code
     * leaderEpoch} a {@code u64}; the chunk buffer's readable bytes are the chunk, and encoding
     * takes ownership of it (it is released with the frame), as for {@link AppendRequest}.
     */
    record ReplicaAppendRequest(
            String stream, int streamlet, int leader, long leaderEpoch, Position at, ByteBuf chunk)
            implements Request {
        @Override
        public Opcode opcode() {
            return Opcode.REPLICA_APPEND;
        }
    }

    /**
     * ReplicaJoin (15), broker to broker: a follower whose copy of the sealed streamlet ends at
     * {@code tail} asks its leader to be in sync again. {@code streamlet} and {@code follower} (the
     * sending broker's id) are {@code u32}s, {@code leaderEpoch} a {@code u64}: the epoch of the
     * leader the copy was made from. {@code takeOver} ({@code u8}): 0 joins the in-sync set, 1 and
     * 2 take the leadership over from the receiver, which leaves the replicas (1) or stays a
     * follower (2). The OK response body is empty.
     */
    record ReplicaJoinRequest(
            String stream,
            int streamlet,
            int follower,
            long leaderEpoch,
            Position tail,
            int takeOver)
            implements Request {
        @Override
        public Opcode opcode() {
            return Opcode.REPLICA_JOIN;
        }
    }

    /**
     * ReplicaMove (16), operator to broker: the receiver takes over broker {@code from}'s replica
     * of a streamlet, and its leadership when {@code from} leads it. {@code streamlet} and {@code
     * from} are {@code u32}s. The OK response body is empty.
     */
    record ReplicaMoveRequest(String stream, int streamlet, int from) implements Request {
        @Override
        public Opcode opcode() {
            return Opcode.REPLICA_MOVE;
        }
    }

    /**
     * ReplicaCheck (17), broker to broker: a follower about to catch up asks its leader for its
     * epoch history and its segments (docs/protocol.md, "Catching up by leader epoch"). {@code
     * streamlet} and {@code follower} (the sending broker's id) are {@code u32}s. The OK response
     * body is a {@link ReplicaCheckResponse}.
     */
    record ReplicaCheckRequest(String stream, int streamlet, int follower) implements Request {
        @Override
        public Opcode opcode() {
            return Opcode.REPLICA_CHECK;
        }
    }

    /**
     * ReplicaTxn (18), broker to broker: a streamlet's leader repeats on a follower one write it
     * made to a file of the streamlet's transaction scope (docs/protocol.md, "ReplicaTxn (18)").
     * {@code streamlet} and {@code leader} (the sending broker's id) are {@code u32}s, {@code
     * leaderEpoch} and {@code offset} {@code u64}s. {@code offset} is an append's (0 for the other
     * ops), {@code to} a rename's new name (empty for the others), {@code data} an append's bytes
     * or a replace's whole new content (empty for the others); the array is held as given, not
     * copied, and compared by content. The OK response body is empty. Java clients never send it:
     * it is here so that its golden frames are checked from Java too.
     */
    record ReplicaTxnRequest(
            String stream,
            int streamlet,
            int leader,
            long leaderEpoch,
            Op op,
            String file,
            long offset,
            String to,
            byte[] data)
            implements Request {
        ReplicaTxnRequest {
            Objects.requireNonNull(op, "op");
            Objects.requireNonNull(data, "data");
        }

        @Override
        public Opcode opcode() {
            return Opcode.REPLICA_TXN;
        }

        /** The write, a {@code u8} on the wire; any other value makes the body malformed. */
        enum Op {
            APPEND(1),
            REPLACE(2),
            RENAME(3),
            DELETE(4);

            private final int code;

            Op(int code) {
                this.code = code;
            }

            int code() {
                return code;
            }

            /** The op of a wire value, or {@code null} when it is none of 1 to 4. */
            static Op fromCode(int code) {
                for (Op op : values()) {
                    if (op.code == code) {
                        return op;
                    }
                }
                return null;
            }
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof ReplicaTxnRequest r
                    && Objects.equals(stream, r.stream)
                    && streamlet == r.streamlet
                    && leader == r.leader
                    && leaderEpoch == r.leaderEpoch
                    && op == r.op
                    && Objects.equals(file, r.file)
                    && offset == r.offset
                    && Objects.equals(to, r.to)
                    && Arrays.equals(data, r.data);
        }

        @Override
        public int hashCode() {
            return Objects.hash(stream, streamlet, leader, leaderEpoch, op, file, offset, to) * 31
                    + Arrays.hashCode(data);
        }

        @Override
        public String toString() {
            return "ReplicaTxnRequest[stream="
                    + stream
                    + ", streamlet="
                    + Integer.toUnsignedString(streamlet)
                    + ", leader="
                    + Integer.toUnsignedString(leader)
                    + ", leaderEpoch="
                    + Long.toUnsignedString(leaderEpoch)
                    + ", op="
                    + op
                    + ", file="
                    + file
                    + ", offset="
                    + Long.toUnsignedString(offset)
                    + ", to="
                    + to
                    + ", data="
                    + data.length
                    + " bytes]";
        }
    }

    /**
     * ReplicaTxnFiles (19), broker to broker: a catching-up follower asks its leader for the files
     * of the streamlet's transaction scope, a page at a time. {@code streamlet}, {@code follower}
     * (the sending broker's id) and {@code maxBytes} (the most file bytes the answer may carry) are
     * {@code u32}s; {@code held} names the bytes of part files the follower copied from earlier
     * answers of the same catch-up, so that the answer goes on from there. The OK response body is
     * a {@link ReplicaTxnFilesResponse}. Java clients never send it: it is here so that its golden
     * frames are checked from Java too.
     */
    record ReplicaTxnFilesRequest(
            String stream, int streamlet, int follower, int maxBytes, List<Held> held)
            implements Request {
        ReplicaTxnFilesRequest {
            held = List.copyOf(held);
        }

        @Override
        public Opcode opcode() {
            return Opcode.REPLICA_TXN_FILES;
        }

        /** The first {@code have} bytes ({@code u64}) of the part file {@code name}. */
        record Held(String name, long have) {
            Held {
                Objects.requireNonNull(name, "name");
            }
        }
    }

    /**
     * ReplicaPublished (40), broker to broker: a streamlet's leader tells an in-sync follower what
     * its readers see, so that the follower's readers see exactly that (docs/protocol.md,
     * "ReplicaPublished (40)"). {@code streamlet} and {@code leader} (the sending broker's id) are
     * {@code u32}s, {@code leaderEpoch}, {@code since} (the version of the view the follower last
     * applied; 0 = a whole view) and {@code version} (the leader's publish version the view was
     * taken at) {@code u64}s; {@code head} is the leader's first retained group and its first
     * segment (all zero when it holds no group); {@code groups}, in ascending ids, are the groups
     * changed since the version the leader last told this follower. The OK response body is empty.
     * Java clients never send it: it is here so that its golden frames are checked from Java too.
     */
    record ReplicaPublishedRequest(
            String stream,
            int streamlet,
            int leader,
            long leaderEpoch,
            long since,
            long version,
            Position head,
            List<PublishedGroup> groups)
            implements Request {
        ReplicaPublishedRequest {
            Objects.requireNonNull(head, "head");
            groups = List.copyOf(groups);
        }

        @Override
        public Opcode opcode() {
            return Opcode.REPLICA_PUBLISHED;
        }

        /**
         * One group ({@code u64} id): whether it is closed (a {@code bool}: any byte but 0 and 1
         * makes the body malformed) and every segment it holds on the leader, in ascending ids.
         */
        record PublishedGroup(long id, boolean closed, List<PublishedSegment> segments) {
            PublishedGroup {
                segments = List.copyOf(segments);
            }
        }

        /**
         * A segment ({@code u64} id) and its {@code committed} bytes ({@code u32}): those of whole
         * chunks published in it.
         */
        record PublishedSegment(long id, int committed) {}
    }

    /**
     * PushSubscribe (20): slot geometry, consumer timeout, one ring per local reader, the record
     * filter the push thread applies and the slot format it writes; {@code replicaRead} sets the
     * frame's {@link #FLAG_REPLICA_READ}, so that a broker following the rings' streamlets in sync
     * may push them from its own copy.
     */
    record PushSubscribeRequest(
            String stream,
            int slotsPerRing,
            int slotBytes,
            int consumerTimeoutMs,
            List<PushRingSpec> rings,
            RecordFilter filter,
            SlotFormat slotFormat,
            boolean replicaRead)
            implements Request {
        /** Served by the streamlets' leader only. */
        PushSubscribeRequest(
                String stream,
                int slotsPerRing,
                int slotBytes,
                int consumerTimeoutMs,
                List<PushRingSpec> rings,
                RecordFilter filter,
                SlotFormat slotFormat) {
            this(
                    stream,
                    slotsPerRing,
                    slotBytes,
                    consumerTimeoutMs,
                    rings,
                    filter,
                    slotFormat,
                    false);
        }

        /** Without a filter, binary slots. */
        PushSubscribeRequest(
                String stream,
                int slotsPerRing,
                int slotBytes,
                int consumerTimeoutMs,
                List<PushRingSpec> rings) {
            this(stream, slotsPerRing, slotBytes, consumerTimeoutMs, rings, RecordFilter.none());
        }

        /** Binary slots. */
        PushSubscribeRequest(
                String stream,
                int slotsPerRing,
                int slotBytes,
                int consumerTimeoutMs,
                List<PushRingSpec> rings,
                RecordFilter filter) {
            this(
                    stream,
                    slotsPerRing,
                    slotBytes,
                    consumerTimeoutMs,
                    rings,
                    filter,
                    SlotFormat.BINARY);
        }

        @Override
        public Opcode opcode() {
            return Opcode.PUSH_SUBSCRIBE;
        }

        @Override
        public int flags() {
            return replicaRead ? FLAG_REPLICA_READ : 0;
        }
    }

    /** PushUpdate (21): the full new list of rings of a subscription. */
    record PushUpdateRequest(long subscriptionId, List<PushRingSpec> rings) implements Request {
        @Override
        public Opcode opcode() {
            return Opcode.PUSH_UPDATE;
        }
    }

    /** PushClose (22). */
    record PushCloseRequest(long subscriptionId) implements Request {
        @Override
        public Opcode opcode() {
            return Opcode.PUSH_CLOSE;
        }
    }

    /** TxnInit (30); {@code scope} as in {@link TxnRef#scope()}. */
    record TxnInitRequest(
            String stream, String transactionalId, long keepPreparedThrough, int scope)
            implements Request {
        @Override
        public Opcode opcode() {
            return Opcode.TXN_INIT;
        }
    }

    /**
     * TxnBegin, TxnPrepare, TxnCommit and TxnAbort (31, 33, 34, 35): their bodies are all one
     * TxnRef, so one record serves the four.
     */
    record TxnRefRequest(Opcode opcode, TxnRef ref) implements Request {
        TxnRefRequest {
            if (opcode != Opcode.TXN_BEGIN
                    && opcode != Opcode.TXN_PREPARE
                    && opcode != Opcode.TXN_COMMIT
                    && opcode != Opcode.TXN_ABORT) {
                throw new IllegalArgumentException(opcode + " has no TxnRef body");
            }
        }
    }

    /**
     * TxnAppend (32): Append's entries after a TxnRef; encoding takes ownership of the chunk
     * buffers, as for {@link AppendRequest}.
     */
    record TxnAppendRequest(TxnRef ref, List<AppendEntry> entries) implements Request {
        @Override
        public Opcode opcode() {
            return Opcode.TXN_APPEND;
        }
    }

    /**
     * TxnList (36); an empty prefix lists every transactional id, {@link TxnRef#BROKER_SCOPE} every
     * scope.
     */
    record TxnListRequest(String stream, String idPrefix, int scope) implements Request {
        @Override
        public Opcode opcode() {
            return Opcode.TXN_LIST;
        }
    }

    /**
     * Encodes a complete request frame. Append frames are composite buffers whose chunk components
     * are the callers' buffers, not copies.
     */
    static ByteBuf encodeRequest(ByteBufAllocator alloc, long requestId, Request request) {
        if (request instanceof AppendRequest r) {
            return encodeChunks(
                    alloc, requestId, r, head -> writeStr(head, r.stream()), r.entries());
        }
        if (request instanceof TxnAppendRequest r) {
            return encodeChunks(
                    alloc, requestId, r, head -> writeTxnRef(head, r.ref()), r.entries());
        }
        if (request instanceof ReplicaAppendRequest r) {
            return encodeReplicaAppend(alloc, requestId, r);
        }
        ByteBuf out = alloc.heapBuffer(64);
        try {
            int start = beginFrame(out, request.opcode().code(), requestId, request.flags());
            writeRequestBody(out, request);
            endFrame(out, start);
            return out;
        } catch (RuntimeException e) {
            out.release();
            throw e;
        }
    }

    private static void writeRequestBody(ByteBuf out, Request request) {
        if (request instanceof HandshakeRequest r) {
            out.writeShortLE(r.minVersion());
            out.writeShortLE(r.maxVersion());
            writeStr(out, r.clientName());
        } else if (request instanceof CreateStreamRequest r) {
            writeStreamConfig(out, r.config());
        } else if (request instanceof DeleteStreamRequest r) {
            writeStr(out, r.name());
        } else if (request instanceof DescribeStreamRequest r) {
            writeStr(out, r.name());
        } else if (request instanceof MetadataRequest r) {
            writeStr(out, r.stream());
            out.writeIntLE(r.streamlets().length);
            for (int s : r.streamlets()) {
                out.writeIntLE(s);
            }
        } else if (request instanceof FetchRequest r) {
            writeStr(out, r.stream());
            out.writeIntLE(r.maxWaitMs());
            out.writeIntLE(r.entries().size());
            for (FetchEntry e : r.entries()) {
                out.writeIntLE(e.streamlet());
                writePosition(out, e.position());
                out.writeIntLE(e.maxBytes());
            }
        } else if (request instanceof LookupTimestampRequest r) {
            writeStr(out, r.stream());
            out.writeIntLE(r.queries().size());
            for (TimestampQuery q : r.queries()) {
                out.writeIntLE(q.streamlet());
                out.writeLongLE(q.timestampMs());
            }
        } else if (request instanceof ClusterMetadataRequest r) {
            out.writeIntLE(r.streams().size());
            for (String stream : r.streams()) {
                writeStr(out, stream);
            }
        } else if (request instanceof MoveStreamletRequest r) {
            writeStr(out, r.stream());
            out.writeIntLE(r.streamlet());
        } else if (request instanceof SealStreamletRequest r) {
            writeStr(out, r.stream());
            out.writeIntLE(r.streamlet());
            out.writeIntLE(r.sealMs());
        } else if (request instanceof ReplicaJoinRequest r) {
            writeStr(out, r.stream());
            out.writeIntLE(r.streamlet());
            out.writeIntLE(r.follower());
            out.writeLongLE(r.leaderEpoch());
            writePosition(out, r.tail());
            out.writeByte(r.takeOver());
        } else if (request instanceof ReplicaMoveRequest r) {
            writeStr(out, r.stream());
            out.writeIntLE(r.streamlet());
            out.writeIntLE(r.from());
        } else if (request instanceof ReplicaCheckRequest r) {
            writeStr(out, r.stream());
            out.writeIntLE(r.streamlet());
            out.writeIntLE(r.follower());
        } else if (request instanceof ReplicaTxnRequest r) {
            writeStr(out, r.stream());
            out.writeIntLE(r.streamlet());
            out.writeIntLE(r.leader());
            out.writeLongLE(r.leaderEpoch());
            out.writeByte(r.op().code());
            writeStr(out, r.file());
            out.writeLongLE(r.offset());
            writeStr(out, r.to());
            out.writeIntLE(r.data().length);
            out.writeBytes(r.data());
        } else if (request instanceof ReplicaTxnFilesRequest r) {
            writeStr(out, r.stream());
            out.writeIntLE(r.streamlet());
            out.writeIntLE(r.follower());
            out.writeIntLE(r.maxBytes());
            out.writeIntLE(r.held().size());
            for (ReplicaTxnFilesRequest.Held h : r.held()) {
                writeStr(out, h.name());
                out.writeLongLE(h.have());
            }
        } else if (request instanceof ReplicaPublishedRequest r) {
            writeStr(out, r.stream());
            out.writeIntLE(r.streamlet());
            out.writeIntLE(r.leader());
            out.writeLongLE(r.leaderEpoch());
            out.writeLongLE(r.since());
            out.writeLongLE(r.version());
            writePosition(out, r.head());
            out.writeIntLE(r.groups().size());
            for (ReplicaPublishedRequest.PublishedGroup g : r.groups()) {
                out.writeLongLE(g.id());
                out.writeByte(g.closed() ? 1 : 0);
                out.writeIntLE(g.segments().size());
                for (ReplicaPublishedRequest.PublishedSegment seg : g.segments()) {
                    out.writeLongLE(seg.id());
                    out.writeIntLE(seg.committed());
                }
            }
        } else if (request instanceof PushSubscribeRequest r) {
            writeStr(out, r.stream());
            out.writeIntLE(r.slotsPerRing());
            out.writeIntLE(r.slotBytes());
            out.writeIntLE(r.consumerTimeoutMs());
            writePushRings(out, r.rings());
            writeRecordFilter(out, r.filter());
            out.writeByte(r.slotFormat().code);
        } else if (request instanceof PushUpdateRequest r) {
            out.writeLongLE(r.subscriptionId());
            writePushRings(out, r.rings());
        } else if (request instanceof PushCloseRequest r) {
            out.writeLongLE(r.subscriptionId());
        } else if (request instanceof TxnInitRequest r) {
            writeStr(out, r.stream());
            writeStr(out, r.transactionalId());
            out.writeLongLE(r.keepPreparedThrough());
            out.writeIntLE(r.scope());
        } else if (request instanceof TxnRefRequest r) {
            writeTxnRef(out, r.ref());
        } else if (request instanceof TxnListRequest r) {
            writeStr(out, r.stream());
            writeStr(out, r.idPrefix());
            out.writeIntLE(r.scope());
        } else if (request instanceof ListStreamsRequest || request instanceof StatsRequest) {
            // empty body
        } else {
            throw new IllegalArgumentException("not encodable here: " + request);
        }
    }

    /**
     * Append and TxnAppend: {@code writeHead} writes what comes before the entries (the stream, or
     * a TxnRef); each chunk is a component of the frame, not a copy.
     */
    private static ByteBuf encodeChunks(
            ByteBufAllocator alloc,
            long requestId,
            Request r,
            Consumer<ByteBuf> writeHead,
            List<AppendEntry> entries) {
        CompositeByteBuf frame = alloc.compositeBuffer(2 * entries.size() + 1);
        int taken = 0;
        try {
            // A component's bytes are counted when it is added: each is written first.
            ByteBuf head = alloc.heapBuffer(LENGTH_BYTES + HEADER_BYTES + 2 + 64 + 4);
            try {
                beginFrame(head, r.opcode().code(), requestId, false);
                writeHead.accept(head);
                head.writeIntLE(entries.size());
            } catch (RuntimeException e) {
                head.release();
                throw e;
            }
            frame.addComponent(true, head);
            long length = head.readableBytes() - LENGTH_BYTES;
            for (AppendEntry e : entries) {
                ByteBuf prefix = alloc.heapBuffer(APPEND_ENTRY_BYTES);
                prefix.writeIntLE(e.streamlet());
                prefix.writeIntLE(e.chunk().readableBytes());
                frame.addComponent(true, prefix);
                frame.addComponent(true, e.chunk());
                taken++;
                length += APPEND_ENTRY_BYTES + e.chunk().readableBytes();
            }
            if (length > 0xFFFF_FFFFL) {
                throw new IllegalArgumentException(
                        r.opcode().wireName() + " request of " + length + " bytes");
            }
            frame.setIntLE(0, (int) length);
            return frame;
        } catch (RuntimeException e) {
            frame.release();
            for (int i = taken; i < entries.size(); i++) {
                entries.get(i).chunk().release();
            }
            throw e;
        }
    }

    /** ReplicaAppend: the head is written, the chunk is a component of the frame, not a copy. */
    private static ByteBuf encodeReplicaAppend(
            ByteBufAllocator alloc, long requestId, ReplicaAppendRequest r) {
        CompositeByteBuf frame = alloc.compositeBuffer(2);
        boolean taken = false;
        try {
            ByteBuf head =
                    alloc.heapBuffer(
                            LENGTH_BYTES + HEADER_BYTES + 2 + 64 + REPLICA_APPEND_FIXED_BYTES);
            try {
                beginFrame(head, r.opcode().code(), requestId, false);
                writeStr(head, r.stream());
                head.writeIntLE(r.streamlet());
                head.writeIntLE(r.leader());
                head.writeLongLE(r.leaderEpoch());
                writePosition(head, r.at());
                head.writeIntLE(r.chunk().readableBytes());
            } catch (RuntimeException e) {
                head.release();
                throw e;
            }
            frame.addComponent(true, head);
            frame.addComponent(true, r.chunk());
            taken = true;
            long length = (long) head.readableBytes() - LENGTH_BYTES + r.chunk().readableBytes();
            if (length > 0xFFFF_FFFFL) {
                throw new IllegalArgumentException(
                        r.opcode().wireName() + " request of " + length + " bytes");
            }
            frame.setIntLE(0, (int) length);
            return frame;
        } catch (RuntimeException e) {
            frame.release();
            if (!taken) {
                r.chunk().release();
            }
            throw e;
        }
    }

    // ---- responses --------------------------------------------------------------------------

    /**
     * A response frame: header, status, message, and the body (a slice of the frame, present only
     * when the status is OK; empty otherwise).
     */
    record ResponseFrame(FrameHeader header, int status, String message, ByteBuf body) {
        StatusCode statusCode() {
            return StatusCode.fromCode(status);
        }

        boolean ok() {
            return status == 0;
        }

        /** The opcode as a readable name, for messages. */
        String what() {
            Opcode op = header.knownOpcode();
            return op != null ? op.wireName() : "opcode " + header.opcode();
        }
    }

    /** Decodes the header, status and message of a complete response frame. */
    static ResponseFrame decodeResponse(ByteBuf frame) {
        FrameHeader h = readHeader(frame);
        if (!h.isResponse()) {
            throw NearstreamProtocolException.malformed(
                    "a request frame where a response was expected");
        }
        if (h.version() != VERSION) {
            throw NearstreamProtocolException.malformed(
                    "response frame version " + h.version() + ", this client speaks " + VERSION);
        }
        WireReader in = new WireReader(frame, "response header");
        int status = in.u16("status");
        String message = in.str("message");
        ByteBuf body = frame.slice();
        if (status != 0 && body.isReadable()) {
            throw NearstreamProtocolException.malformed(
                    "non-OK response (status "
                            + status
                            + ") carries "
                            + body.readableBytes()
                            + " body bytes");
        }
        return new ResponseFrame(h, status, message, body);
    }

    /** The Handshake response body; {@code maxFrameBytes} is a u32. */
    record HandshakeResponse(
            int version, long brokerEpoch, long maxFrameBytes, String brokerVersion) {}

    static HandshakeResponse decodeHandshakeResponse(ByteBuf body) {
        WireReader in = new WireReader(body, "Handshake response");
        HandshakeResponse r =
                new HandshakeResponse(
                        in.u16("version"),
                        in.u64("broker_epoch"),
                        Integer.toUnsignedLong(in.u32("max_frame_bytes")),
                        in.str("broker_version"));
        in.end();
        return r;
    }

    /** Checks that an OK response of an opcode with an empty body has none. */
    static void decodeEmpty(ByteBuf body, String what) {
        new WireReader(body, what).end();
    }

    static StreamConfig decodeDescribeStreamResponse(ByteBuf body) {
        WireReader in = new WireReader(body, "DescribeStream response");
        StreamConfig c = readStreamConfig(in);
        in.end();
        return c;
    }

    static List<String> decodeListStreamsResponse(ByteBuf body) {
        WireReader in = new WireReader(body, "ListStreams response");
        int n = in.count("count", 2);
        List<String> names = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            names.add(in.str("names"));
        }
        in.end();
        return names;
    }

    static List<StreamletMetadata> decodeMetadataResponse(ByteBuf body) {
        WireReader in = new WireReader(body, "Metadata response");
        int n = in.count("count", METADATA_STREAMLET_BYTES);
        List<StreamletMetadata> result = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            int streamlet = in.u32("streamlet");
            Position head = in.position("head");
            Position tail = in.position("tail");
            int g = in.count("group_count", GROUP_BYTES);
            List<GroupMetadata> groups = new ArrayList<>(g);
            for (int j = 0; j < g; j++) {
                groups.add(
                        new GroupMetadata(
                                in.u64("group_id"),
                                in.bool("closed"),
                                in.u64("first_segment"),
                                in.u32("segment_count"),
                                in.u64("bytes")));
            }
            result.add(new StreamletMetadata(streamlet, head, tail, List.copyOf(groups)));
        }
        in.end();
        return result;
    }

    static List<AppendResult> decodeAppendResponse(ByteBuf body) {
        return decodeAppendResponse(body, "Append response");
    }

    /** Append's and TxnAppend's response body (the same layout); {@code what} names it. */
    static List<AppendResult> decodeAppendResponse(ByteBuf body, String what) {
        WireReader in = new WireReader(body, what);
        int n = in.count("count", APPEND_RESULT_BYTES);
        List<AppendResult> results = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            results.add(
                    new AppendResult(
                            in.u32("streamlet"),
                            StatusCode.fromCode(in.u16("status")),
                            in.str("message"),
                            in.position("position"),
                            in.bool("duplicate")));
        }
        in.end();
        return results;
    }

    /**
     * Decodes a Fetch response body. The blocks' data are read-only little-endian views of {@code
     * body} (no copy): valid while {@code body}'s memory is.
     */
    static List<StreamletFetch> decodeFetchResponse(ByteBuf body) {
        WireReader in = new WireReader(body, "Fetch response");
        int n = in.count("count", FETCH_RESULT_BYTES);
        List<StreamletFetch> results = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            int streamlet = in.u32("streamlet");
            StatusCode status = StatusCode.fromCode(in.u16("status"));
            String message = in.str("message");
            Position next = in.position("next");
            Position tail = in.position("tail");
            int b = in.count("block_count", FETCH_BLOCK_BYTES);
            List<ChunkBlock> blocks;
            if (b == 0) {
                blocks = List.of();
            } else {
                ChunkBlock[] array = new ChunkBlock[b];
                for (int j = 0; j < b; j++) {
                    Position at = in.position("at");
                    int index = in.blob("data");
                    array[j] = new ChunkBlock(at, view(body, index, in.lastLength()));
                }
                blocks = List.of(array);
            }
            results.add(new StreamletFetch(streamlet, status, message, next, tail, blocks));
        }
        in.end();
        return results;
    }

    /** Stats values in wire order; values are u64 held in longs. */
    static Map<String, Long> decodeStatsResponse(ByteBuf body) {
        WireReader in = new WireReader(body, "Stats response");
        int n = in.count("count", STAT_BYTES);
        Map<String, Long> values = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            values.put(in.str("name"), in.u64("value"));
        }
        in.end();
        return values;
    }

    static List<TimestampLookup> decodeLookupTimestampResponse(ByteBuf body) {
        WireReader in = new WireReader(body, "LookupTimestamp response");
        int n = in.count("count", LOOKUP_RESULT_BYTES);
        List<TimestampLookup> results = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            results.add(
                    new TimestampLookup(
                            in.u32("streamlet"),
                            StatusCode.fromCode(in.u16("status")),
                            in.str("message"),
                            in.position("position")));
        }
        in.end();
        return results;
    }

    /** Broker ids, placement versions and owners are {@code u32}s held in ints. */
    static ClusterMetadata decodeClusterMetadataResponse(ByteBuf body) {
        WireReader in = new WireReader(body, "ClusterMetadata response");
        int brokerId = in.u32("broker_id");
        int n = in.count("broker_count", BROKER_INFO_BYTES);
        List<BrokerInfo> brokers = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            brokers.add(new BrokerInfo(in.u32("id"), in.str("address"), in.str("host")));
        }
        int m = in.count("stream_count", STREAM_PLACEMENT_BYTES);
        List<StreamPlacement> streams = new ArrayList<>(m);
        for (int i = 0; i < m; i++) {
            String name = in.str("name");
            int version = in.u32("version");
            int k = in.count("count", STREAMLET_PLACEMENT_BYTES);
            Integer[] owners = new Integer[k];
            for (int j = 0; j < k; j++) {
                owners[j] = in.u32("owners");
            }
            ReplicaSet[] replicaSets = new ReplicaSet[k];
            for (int j = 0; j < k; j++) {
                replicaSets[j] = readReplicaSet(in);
            }
            streams.add(new StreamPlacement(name, version, List.of(owners), List.of(replicaSets)));
        }
        int controllerId = in.u32("controller_id");
        in.end();
        return new ClusterMetadata(brokerId, brokers, streams, controllerId);
    }

    /** One ReplicaSet of a StreamPlacement: leader_epoch, then {@code u8}-counted broker ids. */
    static ReplicaSet readReplicaSet(WireReader in) {
        long leaderEpoch = in.u64("leader_epoch");
        List<Integer> replicas = readBrokerIds(in, "r", "replicas");
        List<Integer> isr = readBrokerIds(in, "s", "isr");
        return new ReplicaSet(leaderEpoch, replicas, isr);
    }

    private static List<Integer> readBrokerIds(WireReader in, String countField, String field) {
        int n = in.countU8(countField, 4);
        Integer[] ids = new Integer[n];
        for (int i = 0; i < n; i++) {
            ids[i] = in.u32(field);
        }
        return List.of(ids);
    }

    /** Writes a ReplicaSet; its lists must fit their {@code u8} counts. */
    static void writeReplicaSet(ByteBuf out, ReplicaSet rs) {
        out.writeLongLE(rs.leaderEpoch());
        writeBrokerIds(out, rs.replicas(), "replicas");
        writeBrokerIds(out, rs.isr(), "isr");
    }

    private static void writeBrokerIds(ByteBuf out, List<Integer> ids, String field) {
        if (ids.size() > ReplicaSet.MAX_COUNT) {
            throw new IllegalArgumentException(ids.size() + " " + field + " do not fit a u8 count");
        }
        out.writeByte(ids.size());
        for (int id : ids) {
            out.writeIntLE(id);
        }
    }

    /** The streamlet's tail once the seal holds (all-zero when the seal was lifted). */
    static Position decodeSealStreamletResponse(ByteBuf body) {
        WireReader in = new WireReader(body, "SealStreamlet response");
        Position tail = in.position("tail");
        in.end();
        return tail;
    }

    /**
     * ReplicaCheck's response body: the epoch the receiver leads in, its epoch history (oldest
     * first; empty when it has none) and every segment it retains of the streamlet, by group then
     * segment id. Every value is unsigned; {@code u64}s are held in longs.
     */
    record ReplicaCheckResponse(
            long leaderEpoch, List<EpochStart> epochs, List<SegmentExtent> segments) {
        ReplicaCheckResponse {
            epochs = List.copyOf(epochs);
            segments = List.copyOf(segments);
        }

        /** A leader epoch and the first group its leader created. */
        record EpochStart(long epoch, long startGroup) {}

        /** A segment the leader retains and the bytes it holds now ({@code bytes} is a u32). */
        record SegmentExtent(long group, long segment, int bytes) {}
    }

    static ReplicaCheckResponse decodeReplicaCheckResponse(ByteBuf body) {
        WireReader in = new WireReader(body, "ReplicaCheck response");
        long leaderEpoch = in.u64("leader_epoch");
        int e = in.count("e", REPLICA_CHECK_EPOCH_BYTES);
        List<ReplicaCheckResponse.EpochStart> epochs = new ArrayList<>(e);
        for (int i = 0; i < e; i++) {
            epochs.add(new ReplicaCheckResponse.EpochStart(in.u64("epoch"), in.u64("start_group")));
        }
        int s = in.count("s", REPLICA_CHECK_SEGMENT_BYTES);
        List<ReplicaCheckResponse.SegmentExtent> segments = new ArrayList<>(s);
        for (int i = 0; i < s; i++) {
            segments.add(
                    new ReplicaCheckResponse.SegmentExtent(
                            in.u64("group"), in.u64("segment"), in.u32("bytes")));
        }
        in.end();
        return new ReplicaCheckResponse(leaderEpoch, epochs, segments);
    }

    /**
     * ReplicaTxnFiles' response body, one page: every file of the streamlet's transaction scope now
     * ({@code txn.log}, when the scope has one, whole and first, and the part files of its open and
     * prepared transactions), each with its size and its bytes from {@code offset} on, as many as
     * the request's {@code max_bytes} left. {@code complete} is set when every file's bytes reach
     * its size in this answer.
     */
    record ReplicaTxnFilesResponse(boolean complete, List<TxnFile> files) {
        ReplicaTxnFilesResponse {
            files = List.copyOf(files);
        }

        /**
         * One file: its name, its size ({@code u64}) and its bytes from {@code offset} ({@code
         * u64}) on; the array is held as given and compared by content.
         */
        record TxnFile(String name, long size, long offset, byte[] data) {
            TxnFile {
                Objects.requireNonNull(name, "name");
                Objects.requireNonNull(data, "data");
            }

            @Override
            public boolean equals(Object o) {
                return o instanceof TxnFile f
                        && name.equals(f.name)
                        && size == f.size
                        && offset == f.offset
                        && Arrays.equals(data, f.data);
            }

            @Override
            public int hashCode() {
                return Objects.hash(name, size, offset) * 31 + Arrays.hashCode(data);
            }

            @Override
            public String toString() {
                return "TxnFile[name="
                        + name
                        + ", size="
                        + Long.toUnsignedString(size)
                        + ", offset="
                        + Long.toUnsignedString(offset)
                        + ", data="
                        + data.length
                        + " bytes]";
            }
        }
    }

    /**
     * The file contents are copies: they stay valid once the frame is released. A piece that runs
     * past its file's size is malformed.
     */
    static ReplicaTxnFilesResponse decodeReplicaTxnFilesResponse(ByteBuf body) {
        WireReader in = new WireReader(body, "ReplicaTxnFiles response");
        boolean complete = in.bool("complete");
        int n = in.count("count", REPLICA_TXN_FILE_BYTES);
        List<ReplicaTxnFilesResponse.TxnFile> files = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            String name = in.str("name");
            long size = in.u64("size");
            long offset = in.u64("offset");
            int index = in.blob("data");
            int length = in.lastLength();
            if (Long.compareUnsigned(offset, size) > 0
                    || Long.compareUnsigned(size - offset, Integer.toUnsignedLong(length)) < 0) {
                throw NearstreamProtocolException.malformed(
                        "ReplicaTxnFiles response: file "
                                + name
                                + " has "
                                + Integer.toUnsignedString(length)
                                + " bytes at offset "
                                + Long.toUnsignedString(offset)
                                + ", past its size "
                                + Long.toUnsignedString(size));
            }
            byte[] data = new byte[length];
            in.buffer().getBytes(index, data);
            files.add(new ReplicaTxnFilesResponse.TxnFile(name, size, offset, data));
        }
        in.end();
        return new ReplicaTxnFilesResponse(complete, files);
    }

    static PushSubscription decodePushSubscribeResponse(ByteBuf body) {
        WireReader in = new WireReader(body, "PushSubscribe response");
        PushSubscription r =
                new PushSubscription(
                        in.u64("subscription_id"),
                        in.u64("broker_epoch"),
                        in.str("region_path"),
                        in.u64("region_bytes"));
        in.end();
        return r;
    }

    static TxnInitResult decodeTxnInitResponse(ByteBuf body) {
        WireReader in = new WireReader(body, "TxnInit response");
        TxnInitResult r =
                new TxnInitResult(Integer.toUnsignedLong(in.u32("epoch")), in.u64("last_serial"));
        in.end();
        return r;
    }

    /** The serial of the transaction TxnBegin started (or found open). */
    static long decodeTxnBeginResponse(ByteBuf body) {
        WireReader in = new WireReader(body, "TxnBegin response");
        long serial = in.u64("serial");
        in.end();
        return serial;
    }

    static List<TransactionInfo> decodeTxnListResponse(ByteBuf body) {
        WireReader in = new WireReader(body, "TxnList response");
        int n = in.count("count", TXN_INFO_BYTES);
        List<TransactionInfo> result = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            String id = in.str("transactional_id");
            long epoch = Integer.toUnsignedLong(in.u32("epoch"));
            long serial = in.u64("serial");
            int code = in.u8("state");
            TransactionInfo.State state = TransactionInfo.State.fromCode(code);
            if (state == null) {
                throw NearstreamProtocolException.malformed(
                        "transaction state " + code + " is not 1 (open) or 2 (prepared)");
            }
            result.add(
                    new TransactionInfo(
                            id,
                            epoch,
                            serial,
                            state,
                            in.u64("bytes"),
                            in.u32("chunks"),
                            in.u32("streamlets"),
                            in.i64("started_ms"),
                            in.u32("scope")));
        }
        in.end();
        return result;
    }

    // ---- shared pieces ----------------------------------------------------------------------

    /** The TxnRef body of TxnBegin, TxnPrepare, TxnCommit and TxnAbort, and TxnAppend's head. */
    static void writeTxnRef(ByteBuf out, TxnRef ref) {
        writeStr(out, ref.stream());
        writeStr(out, ref.transactionalId());
        out.writeIntLE((int) ref.epoch());
        out.writeLongLE(ref.serial());
        out.writeIntLE(ref.scope());
    }

    static void writePushRings(ByteBuf out, List<PushRingSpec> rings) {
        out.writeIntLE(rings.size());
        for (PushRingSpec ring : rings) {
            out.writeIntLE(ring.subtaskIndex());
            out.writeIntLE(ring.splits().size());
            for (PushSplitStart split : ring.splits()) {
                out.writeIntLE(split.streamlet());
                writePosition(out, split.start());
            }
        }
    }

    static StreamConfig readStreamConfig(WireReader in) {
        String name = in.str("name");
        int streamlets = in.u32("streamlets");
        int segmentBytes = in.u32("segment_bytes");
        int segmentsPerGroup = in.u32("segments_per_group");
        int activeGroups = in.u32("active_groups");
        int d = in.u8("durability");
        if (d > 2) {
            throw NearstreamProtocolException.malformed("durability " + d + " is not 0, 1 or 2");
        }
        return new StreamConfig(
                name,
                streamlets,
                segmentBytes,
                segmentsPerGroup,
                activeGroups,
                Durability.values()[d],
                in.i64("retention_bytes"),
                in.i64("retention_ms"),
                in.u8("replication"));
    }

    static void writeStreamConfig(ByteBuf out, StreamConfig c) {
        if (c.replication() < 0 || c.replication() > 0xFF) {
            throw new IllegalArgumentException(
                    "replication " + c.replication() + " does not fit a u8");
        }
        writeStr(out, c.name());
        out.writeIntLE(c.streamlets());
        out.writeIntLE(c.segmentBytes());
        out.writeIntLE(c.segmentsPerGroup());
        out.writeIntLE(c.activeGroups());
        out.writeByte(c.durability().ordinal());
        out.writeLongLE(c.retentionBytes());
        out.writeLongLE(c.retentionMs());
        out.writeByte(c.replication());
    }

    /** PushSubscribe's RecordFilter: a kind byte, then the kind's fields. */
    static void writeRecordFilter(ByteBuf out, RecordFilter f) {
        out.writeByte(f.kind().code);
        switch (f.kind()) {
            case JSON_FIELD_IN -> {
                writeStr(out, f.field());
                out.writeIntLE(f.values().size());
                for (String v : f.values()) {
                    writeStr(out, v);
                }
            }
            case BYTES_CONTAIN -> {
                byte[] needle = f.needle();
                out.writeIntLE(needle.length);
                out.writeBytes(needle);
            }
            case NONE -> {}
        }
    }

    static void writeStr(ByteBuf out, String s) {
        if (s == null) {
            throw new IllegalArgumentException("a protocol string must not be null");
        }
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
        if (bytes.length > MAX_STR_BYTES) {
            throw new IllegalArgumentException(
                    "string of " + bytes.length + " UTF-8 bytes exceeds the 65535-byte limit");
        }
        out.writeShortLE(bytes.length);
        out.writeBytes(bytes);
    }

    static void writePosition(ByteBuf out, Position p) {
        out.writeLongLE(p.group());
        out.writeLongLE(p.segment());
        out.writeIntLE(p.offset());
    }

    /** A read-only little-endian view of {@code length} bytes at {@code index}; no copy. */
    static ByteBuffer view(ByteBuf buf, int index, int length) {
        return buf.nioBuffer(index, length).asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
    }
}
