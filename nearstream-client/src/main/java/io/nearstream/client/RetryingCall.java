package io.nearstream.client;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Waits for an idempotent request, sending it again after retriable failures ({@link
 * StatusCode#isRetriable()}: transport errors, {@code STORAGE_ERROR}, {@code SHUTTING_DOWN}) with a
 * fixed back-off until its time is up. The transaction requests (TxnInit, TxnBegin, TxnPrepare,
 * TxnCommit, TxnAbort, TxnList) are safe to send again (docs/protocol.md, "Transactions"); appended
 * chunks are retried by the producer's sender instead, without blocking anyone.
 */
final class RetryingCall {

    private static final Logger LOG = LoggerFactory.getLogger(RetryingCall.class);

    private RetryingCall() {}

    /**
     * @param what names the request in messages, e.g. {@code "TxnPrepare of s/t epoch 1 serial 2"}
     * @throws NearstreamClientException the fatal failure, or the last retriable one when {@code
     *     timeout} has passed
     */
    static <T> T call(
            String what,
            Supplier<CompletableFuture<T>> request,
            Duration backoff,
            Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (int attempt = 1; ; attempt++) {
            NearstreamClientException failure;
            try {
                return request.get().get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new NearstreamClientException(
                        StatusCode.IO_ERROR, "interrupted while waiting for " + what, e);
            } catch (ExecutionException e) {
                failure = BatchingProducer.asClientException(e.getCause());
            } catch (RuntimeException e) {
                failure = BatchingProducer.asClientException(e);
            }
            if (!failure.isRetriable()) {
                throw failure;
            }
            if (System.nanoTime() + backoff.toNanos() - deadline > 0) {
                throw new NearstreamClientException(
                        failure.status(),
                        what
                                + " still failing after "
                                + attempt
                                + " attempts in "
                                + timeout
                                + ": "
                                + failure.getMessage(),
                        failure);
            }
            LOG.info("{} failed (attempt {}), retrying: {}", what, attempt, failure.getMessage());
            try {
                Thread.sleep(backoff.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new NearstreamClientException(
                        StatusCode.IO_ERROR, "interrupted while retrying " + what, e);
            }
        }
    }
}
