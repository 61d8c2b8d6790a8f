package io.nearstream.benchmarks.workloads;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NearstreamClientException;
import io.nearstream.client.StatusCode;
import io.nearstream.client.StreamConfig;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/** Creates the stream a producer writes to, or checks the one that is there. */
public final class StreamSetup {

    private StreamSetup() {}

    /**
     * Creates {@code stream} with {@code streamlets} streamlets (memory only, broker defaults) when
     * it does not exist; an existing stream must have that many streamlets.
     */
    public static void ensure(NearstreamClient client, String stream, int streamlets)
            throws Exception {
        try {
            StreamConfig existing = client.describeStream(stream).get(30, TimeUnit.SECONDS);
            if (existing.streamlets() != streamlets) {
                throw new IllegalArgumentException(
                        "stream '"
                                + stream
                                + "' exists with "
                                + existing.streamlets()
                                + " streamlets, asked for "
                                + streamlets);
            }
        } catch (ExecutionException | CompletionException e) {
            if (e.getCause() instanceof NearstreamClientException nce
                    && nce.status() == StatusCode.STREAM_NOT_FOUND) {
                client.createStream(StreamConfig.of(stream, streamlets)).get(30, TimeUnit.SECONDS);
            } else {
                throw e;
            }
        }
    }
}
