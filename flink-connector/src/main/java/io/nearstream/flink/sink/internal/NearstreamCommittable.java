package io.nearstream.flink.sink.internal;

import io.nearstream.client.BrokerTxnRef;
import io.nearstream.client.TxnRef;
import org.apache.flink.annotation.Internal;

/**
 * One part of a prepared transaction, for the committer: everything TxnCommit needs, the stream,
 * the broker and the scope included, so a committable restored into a job that now writes elsewhere
 * still commits where it was written. A checkpoint's transaction over several brokers is one
 * committable per broker; on a replicated stream, one per streamlet it wrote to, which commits in
 * the streamlet's scope on whichever broker leads the streamlet at commit time (a failover since
 * the checkpoint does not lose it).
 *
 * @param broker the broker's id in a cluster, or {@link BrokerTxnRef#ONLY_BROKER} for a sink that
 *     writes to one broker; for a streamlet scope, the leader at the checkpoint, for messages only
 * @param scope {@link TxnRef#BROKER_SCOPE}, or the streamlet of a replicated stream's part
 */
@Internal
public record NearstreamCommittable(
        String stream, int broker, String transactionalId, long epoch, long serial, int scope) {

    /** A part in the broker scope: of a stream without replication. */
    public NearstreamCommittable(
            String stream, int broker, String transactionalId, long epoch, long serial) {
        this(stream, broker, transactionalId, epoch, serial, TxnRef.BROKER_SCOPE);
    }

    public static NearstreamCommittable of(BrokerTxnRef part) {
        TxnRef ref = part.ref();
        return new NearstreamCommittable(
                ref.stream(),
                part.broker(),
                ref.transactionalId(),
                ref.epoch(),
                ref.serial(),
                ref.scope());
    }

    public BrokerTxnRef part() {
        return new BrokerTxnRef(broker, new TxnRef(stream, transactionalId, epoch, serial, scope));
    }
}
