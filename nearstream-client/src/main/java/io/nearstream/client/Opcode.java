package io.nearstream.client;

/**
 * The operations of protocol version 1 (docs/protocol.md, "Opcodes"); the numbers are wire values.
 */
enum Opcode {
    HANDSHAKE(1, "Handshake"),
    CREATE_STREAM(2, "CreateStream"),
    DELETE_STREAM(3, "DeleteStream"),
    DESCRIBE_STREAM(4, "DescribeStream"),
    LIST_STREAMS(5, "ListStreams"),
    METADATA(6, "Metadata"),
    APPEND(7, "Append"),
    FETCH(8, "Fetch"),
    STATS(9, "Stats"),
    LOOKUP_TIMESTAMP(10, "LookupTimestamp"),
    CLUSTER_METADATA(11, "ClusterMetadata"),
    MOVE_STREAMLET(12, "MoveStreamlet"),
    SEAL_STREAMLET(13, "SealStreamlet"),
    REPLICA_APPEND(14, "ReplicaAppend"),
    REPLICA_JOIN(15, "ReplicaJoin"),
    REPLICA_MOVE(16, "ReplicaMove"),
    REPLICA_CHECK(17, "ReplicaCheck"),
    REPLICA_TXN(18, "ReplicaTxn"),
    REPLICA_TXN_FILES(19, "ReplicaTxnFiles"),
    PUSH_SUBSCRIBE(20, "PushSubscribe"),
    PUSH_UPDATE(21, "PushUpdate"),
    PUSH_CLOSE(22, "PushClose"),
    TXN_INIT(30, "TxnInit"),
    TXN_BEGIN(31, "TxnBegin"),
    TXN_APPEND(32, "TxnAppend"),
    TXN_PREPARE(33, "TxnPrepare"),
    TXN_COMMIT(34, "TxnCommit"),
    TXN_ABORT(35, "TxnAbort"),
    TXN_LIST(36, "TxnList"),
    REPLICA_PUBLISHED(40, "ReplicaPublished");

    private static final Opcode[] BY_CODE = new Opcode[41];

    static {
        for (Opcode op : values()) {
            BY_CODE[op.code] = op;
        }
    }

    private final int code;
    private final String wireName;

    Opcode(int code, String wireName) {
        this.code = code;
        this.wireName = wireName;
    }

    int code() {
        return code;
    }

    /** The name used by docs/protocol.md and vectors.json. */
    String wireName() {
        return wireName;
    }

    /** The opcode of a wire value, or {@code null} when this client does not know it. */
    static Opcode fromCode(int code) {
        return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
    }
}
