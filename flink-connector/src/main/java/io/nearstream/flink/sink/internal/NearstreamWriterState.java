package io.nearstream.flink.sink.internal;

import java.util.Map;
import org.apache.flink.annotation.Internal;

/**
 * What an exactly-once writer checkpoints: its transactional id and, per part, the highest serial
 * it has prepared there (a part the writer never prepared in is absent). A part is a broker, or on
 * a replicated stream a streamlet, whose scope has its own serials wherever its leader is. A writer
 * restored with it keeps that id's prepared transactions up to the serial in each part, which the
 * committer's restored committables commit, and aborts the later ones and those of other parts.
 *
 * @param streamletScopes whether the parts are streamlets (the stream was replicated) rather than
 *     brokers, so that a part key is never taken for the other kind
 * @param lastPreparedSerialByPart part key (broker id, {@code BrokerTxnRef.ONLY_BROKER} for a sink
 *     that writes to one broker; or streamlet) → serial
 */
@Internal
public record NearstreamWriterState(
        String transactionalId,
        boolean streamletScopes,
        Map<Integer, Long> lastPreparedSerialByPart) {

    public NearstreamWriterState {
        lastPreparedSerialByPart = Map.copyOf(lastPreparedSerialByPart);
    }

    /** The state of a writer whose parts are brokers (a stream without replication). */
    public NearstreamWriterState(
            String transactionalId, Map<Integer, Long> lastPreparedSerialByBroker) {
        this(transactionalId, false, lastPreparedSerialByBroker);
    }
}
