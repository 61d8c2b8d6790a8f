package io.nearstream.client;

/**
 * The outcome of one append entry: {@code status} OK with the chunk's position, or a refusal.
 * {@code duplicate} marks a retried chunk the broker already had (position all-zero when it no
 * longer remembers where). {@link StatusCode#IO_ERROR} (never sent by a broker) comes from a {@link
 * NearstreamClusterClient} whose request carrying the entry to its broker was lost: the chunk may
 * or may not have been stored, as when a whole Append fails with IO_ERROR.
 */
public record AppendResult(
        int streamlet, StatusCode status, String message, Position position, boolean duplicate)
        implements EntryStatus {

    public boolean ok() {
        return status == StatusCode.OK;
    }
}
