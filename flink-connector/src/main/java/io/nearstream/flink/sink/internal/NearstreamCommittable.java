package io.nearstream.flink.sink.internal;

import io.nearstream.client.BrokerTxnRef;
import io.nearstream.client.TxnRef;
import org.apache.flink.annotation.Internal;

/**
 * One broker's part of a prepared transaction, for the committer: everything TxnCommit needs, the
 * stream and the broker included, so a committable restored into a job that now writes elsewhere
 * still commits where it was written. A checkpoint's transaction over several brokers is one
 * committable per broker.
 *
 * @param broker the broker's id in a cluster, or {@link BrokerTxnRef#ONLY_BROKER} for a sink that
 *     writes to one broker
 */
@Internal
public record NearstreamCommittable(
        String stream, int broker, String transactionalId, long epoch, long serial) {

    public static NearstreamCommittable of(BrokerTxnRef part) {
        TxnRef ref = part.ref();
        return new NearstreamCommittable(
                ref.stream(), part.broker(), ref.transactionalId(), ref.epoch(), ref.serial());
    }

    public BrokerTxnRef part() {
        return new BrokerTxnRef(broker, new TxnRef(stream, transactionalId, epoch, serial));
    }
}
