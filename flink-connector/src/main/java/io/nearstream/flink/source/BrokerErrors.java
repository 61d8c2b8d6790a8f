package io.nearstream.flink.source;

import io.nearstream.client.NearstreamClientException;
import io.nearstream.client.StatusCode;
import java.io.IOException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;

/**
 * The one place where the connector classifies broker and transport failures. A retriable one
 * (transport errors, timeouts, {@link StatusCode#isRetriable()}) becomes an {@link IOException},
 * which fails the task and lets Flink's restart strategy retry; anything else becomes a {@link
 * NearstreamException}, which names what cannot work.
 */
@Internal
public final class BrokerErrors {

    private BrokerErrors() {}

    /** The status behind a failure: the broker's, IO_ERROR for timeouts, null when unknown. */
    @Nullable
    public static StatusCode statusOf(Throwable t) {
        Throwable cause = unwrap(t);
        if (cause instanceof NearstreamClientException) {
            return ((NearstreamClientException) cause).status();
        }
        if (cause instanceof TimeoutException || cause instanceof IOException) {
            return StatusCode.IO_ERROR;
        }
        return null;
    }

    /** Whether sending the same request again may succeed. */
    public static boolean isRetriable(Throwable t) {
        StatusCode status = statusOf(t);
        return status != null && status.isRetriable();
    }

    /**
     * The failure of {@code what}, classified: a fatal one is thrown here as a {@link
     * NearstreamException}; a retriable one is returned as an {@link IOException}, which the caller
     * throws (or retries). Use as {@code throw BrokerErrors.failure(what, t);}.
     */
    public static IOException failure(String what, Throwable t) {
        Throwable cause = unwrap(t);
        StatusCode status = statusOf(cause);
        if (status != null && status.isRetriable()) {
            return new IOException(what + " failed (retriable " + status + ")", cause);
        }
        throw fatal(what, cause);
    }

    /** The same for a failed entry (one streamlet) of an OK response. */
    public static IOException failure(String what, StatusCode status, String message) {
        if (status.isRetriable()) {
            return new IOException(text(what, status, message));
        }
        throw fatal(what, status, message);
    }

    /** A failure that retrying cannot mend, e.g. from the enumerator's threads. */
    public static NearstreamException fatal(String what, Throwable t) {
        Throwable cause = unwrap(t);
        if (cause instanceof NearstreamException) {
            return (NearstreamException) cause;
        }
        return new NearstreamException(
                what + " failed: " + cause.getMessage(), statusOf(cause), cause);
    }

    /** A failed entry whose status the caller knows is fatal (e.g. DATA_LOSS). */
    public static NearstreamException fatal(String what, StatusCode status, String message) {
        String text = text(what, status, message);
        if (status == StatusCode.POSITION_OUT_OF_RANGE) {
            text +=
                    " (the position was removed by retention or never existed; restart the job"
                            + " from other starting positions)";
        }
        if (status == StatusCode.DATA_LOSS) {
            text +=
                    " (set '"
                            + NearstreamSourceOptions.SKIP_DAMAGED_DATA.key()
                            + "' to true to skip damaged ranges, counted in the"
                            + " numDamagedRangesSkipped metric)";
        }
        return new NearstreamException(text, status, null);
    }

    private static String text(String what, StatusCode status, String message) {
        return what + " failed with " + status + (message.isEmpty() ? "" : ": " + message);
    }

    /** The cause inside the wrappers of {@code CompletableFuture}. */
    public static Throwable unwrap(Throwable t) {
        Throwable cause = t;
        while ((cause instanceof CompletionException || cause instanceof ExecutionException)
                && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause;
    }
}
