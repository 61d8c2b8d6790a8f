package io.nearstream.client;

import javax.annotation.Nullable;

/**
 * What {@link NearstreamProducer#send(byte[], SendCallback)} reports about one record: where it was
 * stored, or why it was not. Runs on the client's I/O thread (or the caller's, for a record that
 * cannot be sent at all): it must not block. One instance may serve every send.
 */
@FunctionalInterface
public interface SendCallback {

    /**
     * @param position where the record was stored, or null when it failed
     * @param error why the record was not stored (after the producer's retries), or null
     */
    void onCompletion(@Nullable RecordPosition position, @Nullable Exception error);
}
