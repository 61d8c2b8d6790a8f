package io.nearstream.client;

/**
 * One open or prepared transaction, as TxnList reports it.
 *
 * @param epoch the epoch the transaction was begun in
 * @param bytes chunk bytes the transaction holds
 * @param startedMs the broker's wall-clock time of its TxnBegin (ms since the Unix epoch)
 * @param scope the transaction's scope, an unsigned {@code u32}: {@link TxnRef#BROKER_SCOPE} or a
 *     streamlet index
 */
public record TransactionInfo(
        String transactionalId,
        long epoch,
        long serial,
        State state,
        long bytes,
        int chunks,
        int streamlets,
        long startedMs,
        int scope) {

    /** The states TxnList reports; the numbers are wire values. */
    public enum State {
        OPEN(1),
        PREPARED(2);

        private final int code;

        State(int code) {
            this.code = code;
        }

        public int code() {
            return code;
        }

        /** The state of a wire value, or {@code null} when it is none of them. */
        static State fromCode(int code) {
            for (State s : values()) {
                if (s.code == code) {
                    return s;
                }
            }
            return null;
        }
    }

    /** The reference a committer or an aborting successor uses for it. */
    public TxnRef ref(String stream) {
        return new TxnRef(stream, transactionalId, epoch, serial, scope);
    }
}
