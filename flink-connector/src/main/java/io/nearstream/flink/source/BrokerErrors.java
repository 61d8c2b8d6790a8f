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

    /** Whether an entry status of an otherwise OK response may succeed when asked again. */
    public static boolean isRetriable(StatusCode status) {
        return status.isRetriable();
    }

    /** The exception that {@code SplitReader.fetch()} and the enumerator throw for {@code t}. */
    public static Exception classify(String what, Throwable t) {
        Throwable cause = unwrap(t);
        StatusCode status = statusOf(cause);
        if (status != null && status.isRetriable()) {
            return new IOException(what + " failed (retriable " + status + ")", cause);
        }
        return new NearstreamException(what + " failed: " + cause.getMessage(), status, cause);
    }

    /** The exception for a failed entry (one streamlet) of an OK response. */
    public static Exception classify(String what, StatusCode status, String message) {
        String text = what + " failed with " + status + (message.isEmpty() ? "" : ": " + message);
        if (status.isRetriable()) {
            return new IOException(text);
        }
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
