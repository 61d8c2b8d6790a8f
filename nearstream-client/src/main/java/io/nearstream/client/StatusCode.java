package io.nearstream.client;

/**
 * Broker status codes (docs/protocol.md); the numbers are part of the protocol. {@link
 * #isRetriable()} is the one place that classifies them for clients and the connector.
 */
public enum StatusCode {
    OK(0, false),
    MALFORMED_REQUEST(1, false),
    UNSUPPORTED_VERSION(2, false),
    UNKNOWN_OPCODE(3, false),
    FRAME_TOO_LARGE(4, false),
    STREAM_NOT_FOUND(5, false),
    STREAM_EXISTS(6, false),
    STREAMLET_NOT_FOUND(7, false),
    INVALID_ARGUMENT(8, false),
    CORRUPT_CHUNK(9, false),
    CHUNK_TOO_LARGE(10, false),
    OUT_OF_ORDER_SEQUENCE(11, false),
    POSITION_OUT_OF_RANGE(12, false),
    STORAGE_ERROR(13, true),
    SHUTTING_DOWN(14, true),
    INTERNAL(15, false),
    /** Local transport failure (connection lost, timeout); never sent by the broker. */
    IO_ERROR(16, true),
    /**
     * A read reached stored bytes that the broker's recovery found damaged; a fetch result's {@code
     * next} is where they end (a reader told to skip them goes on there).
     */
    DATA_LOSS(17, false),
    /** No such transactional id, or no transaction with that serial (docs/protocol.md). */
    TXN_NOT_FOUND(18, false),
    /** An older epoch than the transactional id's current one: the sender is a zombie. */
    TXN_FENCED(19, false),
    /** The transaction was aborted (owner, successor, operator or timeout). */
    TXN_ABORTED(20, false),
    /** The transaction's state does not allow the operation. */
    INVALID_TXN_STATE(21, false),
    /**
     * The streamlet is stored by another broker of the cluster (the message names it): refresh the
     * cluster metadata and send to the owner.
     */
    NOT_OWNER(22, true),
    /**
     * The streamlet's broker is not registered with the cluster now (stopped, crashed or cut off
     * from ZooKeeper); it may come back, so retry after a back-off.
     */
    BROKER_UNAVAILABLE(23, true),
    /** The broker cannot reach ZooKeeper, so it refuses a placement change (create, delete). */
    CLUSTER_UNAVAILABLE(24, true),
    /**
     * The streamlet is being moved to another broker: it takes no appends until the move ends, then
     * its owner takes them ({@link #NOT_OWNER} names it), so retry after a back-off.
     */
    STREAMLET_MOVING(25, true);

    private final int code;
    private final boolean retriable;

    StatusCode(int code, boolean retriable) {
        this.code = code;
        this.retriable = retriable;
    }

    public int code() {
        return code;
    }

    public boolean isRetriable() {
        return retriable;
    }

    /** Maps a wire code; unknown codes (a newer broker) map to {@link #INTERNAL}. */
    public static StatusCode fromCode(int code) {
        for (StatusCode s : values()) {
            if (s.code == code) {
                return s;
            }
        }
        return INTERNAL;
    }
}
