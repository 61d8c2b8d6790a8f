package io.nearstream.flink.sink.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.BrokerTxnRef;
import io.nearstream.flink.sink.testutils.TestCommitRequest;
import io.nearstream.flink.sink.testutils.TestCommitRequest.Outcome;
import java.net.ServerSocket;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A committer whose broker cannot be reached pauses — retrying with back-off for up to the request
 * timeout — before it hands the commit back to Flink: Flink retries a {@code retryLater()} at once,
 * {@code sink.committer.retries} times, so without the pause a restored committer meeting a broker
 * that is restarting fails its task within milliseconds (docs/flink-connector.md, "Sink": "the
 * pause is the committer's").
 */
class NearstreamCommitterUnreachableBrokerTest {

    private static final long REQUEST_TIMEOUT_MS = 400;
    private static final long BACKOFF_MS = 50;

    @Test
    void aBrokerThatCannotBeConnectedToIsRetriedForTheRequestTimeoutBeforeRetryLater()
            throws Exception {
        int port;
        try (ServerSocket free = new ServerSocket(0)) {
            port = free.getLocalPort(); // closed again: connecting to it is refused
        }
        ProducerSettings settings =
                new ProducerSettings(
                        "127.0.0.1:" + port,
                        "s",
                        64 * 1024,
                        0,
                        1_000,
                        REQUEST_TIMEOUT_MS,
                        BACKOFF_MS);
        NearstreamCommittable committable =
                new NearstreamCommittable("s", BrokerTxnRef.ONLY_BROKER, "t-1-0", 1, 1);
        TestCommitRequest<NearstreamCommittable> request = new TestCommitRequest<>(committable);
        long elapsedMs;
        try (NearstreamCommitter committer = new NearstreamCommitter(settings)) {
            // Flink's first try: it also pays for starting the client's event loop.
            committer.commit(List.of(new TestCommitRequest<>(committable)));
            // Flink's retry of the retryLater(), at once: what it waits for is the committer's.
            long start = System.nanoTime();
            committer.commit(List.of(request));
            elapsedMs = (System.nanoTime() - start) / 1_000_000;
        }

        assertThat(request.outcome()).isEqualTo(Outcome.RETRY_LATER);
        assertThat(elapsedMs)
                .as(
                        "ms the committer kept trying to reach the broker before retryLater"
                                + " (request timeout %s ms, back-off %s ms)",
                        REQUEST_TIMEOUT_MS, BACKOFF_MS)
                .isGreaterThanOrEqualTo(REQUEST_TIMEOUT_MS - BACKOFF_MS);
    }
}
