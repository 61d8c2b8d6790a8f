package io.nearstream.client;

/** A failed request: the broker's status (or {@link StatusCode#IO_ERROR}) and its message. */
public class NearstreamClientException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final StatusCode status;
    private final String reason;

    public NearstreamClientException(StatusCode status, String message) {
        super(status + ": " + message);
        this.status = status;
        this.reason = message;
    }

    public NearstreamClientException(StatusCode status, String message, Throwable cause) {
        super(status + ": " + message, cause);
        this.status = status;
        this.reason = message;
    }

    /** The message without the status in front, for wrapping in another with the same status. */
    public String reason() {
        return reason;
    }

    public StatusCode status() {
        return status;
    }

    /** Whether the same request may succeed when sent again (see {@link StatusCode}). */
    public boolean isRetriable() {
        return status.isRetriable();
    }
}
