package io.nearstream.flink.sink.internal;

import java.util.Map;
import org.apache.flink.annotation.Internal;

/**
 * What an exactly-once writer checkpoints: its transactional id and, per broker, the highest serial
 * it has prepared there (a broker the writer never prepared on is absent). A writer restored with
 * it keeps that id's prepared transactions up to the serial on each broker, which the committer's
 * restored committables commit, and aborts the later ones and those on other brokers.
 *
 * @param lastPreparedSerialByBroker broker id ({@code BrokerTxnRef.ONLY_BROKER} for a sink that
 *     writes to one broker) → serial
 */
@Internal
public record NearstreamWriterState(
        String transactionalId, Map<Integer, Long> lastPreparedSerialByBroker) {

    public NearstreamWriterState {
        lastPreparedSerialByBroker = Map.copyOf(lastPreparedSerialByBroker);
    }
}
