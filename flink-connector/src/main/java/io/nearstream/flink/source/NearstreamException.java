package io.nearstream.flink.source;

import io.nearstream.client.StatusCode;
import java.util.Optional;
import javax.annotation.Nullable;
import org.apache.flink.annotation.PublicEvolving;
import org.apache.flink.util.FlinkRuntimeException;

/**
 * A failure of the Nearstream connector that retrying the same request will not fix: a missing
 * stream or streamlet, a position removed by retention, a broker that refuses the request. Carries
 * the broker's {@link StatusCode} when the broker sent one.
 */
@PublicEvolving
public class NearstreamException extends FlinkRuntimeException {

    private static final long serialVersionUID = 1L;

    @Nullable private final StatusCode status;

    public NearstreamException(String message) {
        this(message, null, null);
    }

    public NearstreamException(
            String message, @Nullable StatusCode status, @Nullable Throwable cause) {
        super(message, cause);
        this.status = status;
    }

    /** The broker's status code behind this failure, if there was one. */
    public Optional<StatusCode> status() {
        return Optional.ofNullable(status);
    }
}
