package io.nearstream.client;

import java.util.Objects;

/**
 * Names one transaction of a stream (docs/protocol.md, "Transactions (30–36)"): its transactional
 * id, the epoch it was begun in, and its serial. Everything a committer needs to commit or abort a
 * prepared transaction it did not begin, e.g. after a restore.
 *
 * @param epoch a {@code u32} on the wire, 1 for an id's first owner
 * @param serial the transaction's serial; 0 only in the TxnBegin that asks for a new one
 */
public record TxnRef(String stream, String transactionalId, long epoch, long serial) {

    public TxnRef {
        Objects.requireNonNull(stream, "stream");
        Objects.requireNonNull(transactionalId, "transactionalId");
        if (epoch < 0 || epoch > 0xFFFF_FFFFL) {
            throw new IllegalArgumentException("epoch must be a u32, got " + epoch);
        }
    }

    /** The same transactional id and epoch with another serial. */
    public TxnRef withSerial(long newSerial) {
        return new TxnRef(stream, transactionalId, epoch, newSerial);
    }

    @Override
    public String toString() {
        return stream
                + "/"
                + transactionalId
                + " epoch "
                + epoch
                + " serial "
                + Long.toUnsignedString(serial);
    }
}
