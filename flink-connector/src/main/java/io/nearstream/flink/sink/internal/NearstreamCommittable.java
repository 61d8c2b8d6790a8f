package io.nearstream.flink.sink.internal;

import io.nearstream.client.TxnRef;
import org.apache.flink.annotation.Internal;

/**
 * A prepared transaction for the committer: everything TxnCommit needs, the stream included, so a
 * committable restored into a job that now writes elsewhere still commits where it was written.
 */
@Internal
public record NearstreamCommittable(
        String stream, String transactionalId, long epoch, long serial) {

    public static NearstreamCommittable of(TxnRef ref) {
        return new NearstreamCommittable(
                ref.stream(), ref.transactionalId(), ref.epoch(), ref.serial());
    }

    public TxnRef ref() {
        return new TxnRef(stream, transactionalId, epoch, serial);
    }
}
