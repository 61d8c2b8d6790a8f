package io.nearstream.client;

import javax.annotation.Nullable;

/**
 * What {@link NearstreamProducer#send(byte[], SendCallback)} reports about one record: where it was
 * stored, or why it was not. Runs on the client's I/O thread when the broker answers, on the
 * producer's sender thread for a record given up there (delivery timeout, the producer closing), or
 * on the caller's thread for a record that cannot be sent at all: it must not block. One instance
 * may serve every send. An exception it throws is logged at error level by the producer and does
 * not keep the other records' callbacks from running.
 */
@FunctionalInterface
public interface SendCallback {

    /**
     * @param position where the record was stored, or null when it failed
     * @param error why the record was not stored (after the producer's retries), or null
     */
    void onCompletion(@Nullable RecordPosition position, @Nullable Exception error);
}
