package io.nearstream.client;

import java.util.Objects;

/**
 * Names one transaction of a stream (docs/protocol.md, "Transactions (30–36)"): its transactional
 * id, the epoch it was begun in, its serial and its scope. Everything a committer needs to commit
 * or abort a prepared transaction it did not begin, e.g. after a restore.
 *
 * @param epoch a {@code u32} on the wire, 1 for an id's first owner
 * @param serial the transaction's serial; 0 only in the TxnBegin that asks for a new one
 * @param scope a {@code u32} on the wire: {@link #BROKER_SCOPE}, or a streamlet index (a replicated
 *     stream's streamlet scope); epochs and serials are the scope's own
 */
public record TxnRef(String stream, String transactionalId, long epoch, long serial, int scope) {

    /**
     * The broker scope, {@code 0xFFFFFFFF} as an unsigned {@code u32}: the scope of every stream
     * without replication. In TxnList it asks for every scope the broker keeps.
     */
    public static final int BROKER_SCOPE = 0xFFFF_FFFF;

    public TxnRef {
        Objects.requireNonNull(stream, "stream");
        Objects.requireNonNull(transactionalId, "transactionalId");
        if (epoch < 0 || epoch > 0xFFFF_FFFFL) {
            throw new IllegalArgumentException("epoch must be a u32, got " + epoch);
        }
    }

    /** A transaction in the {@link #BROKER_SCOPE}. */
    public TxnRef(String stream, String transactionalId, long epoch, long serial) {
        this(stream, transactionalId, epoch, serial, BROKER_SCOPE);
    }

    /** The same transactional id, epoch and scope with another serial. */
    public TxnRef withSerial(long newSerial) {
        return new TxnRef(stream, transactionalId, epoch, newSerial, scope);
    }

    @Override
    public String toString() {
        // The broker scope is left out: it is every stream's without replication.
        return stream
                + "/"
                + transactionalId
                + " epoch "
                + epoch
                + " serial "
                + Long.toUnsignedString(serial)
                + (scope == BROKER_SCOPE ? "" : " scope " + Integer.toUnsignedString(scope));
    }
}
