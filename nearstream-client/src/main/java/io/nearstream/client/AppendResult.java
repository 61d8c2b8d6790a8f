package io.nearstream.client;

/**
 * The outcome of one append entry: {@code status} OK with the chunk's position, or a refusal.
 * {@code duplicate} marks a retried chunk the broker already had (position all-zero when it no
 * longer remembers where).
 */
public record AppendResult(
        int streamlet, StatusCode status, String message, Position position, boolean duplicate) {

    public boolean ok() {
        return status == StatusCode.OK;
    }
}
