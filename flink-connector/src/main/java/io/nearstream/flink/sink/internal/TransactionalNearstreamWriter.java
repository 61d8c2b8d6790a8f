package io.nearstream.flink.sink.internal;

import io.nearstream.client.BrokerTxnRef;
import io.nearstream.client.NearstreamClientException;
import io.nearstream.client.NearstreamTransactionalProducer;
import io.nearstream.client.StatusCode;
import io.nearstream.client.TransactionInfo;
import io.nearstream.flink.sink.NearstreamRecordSerializationSchema;
import io.nearstream.flink.source.NearstreamException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The writer of {@code EXACTLY_ONCE}: one transaction per checkpoint, under the writer's own
 * transactional id {@code <prefix>-<parallelism>-<subtask>} ({@link TransactionalIds}). Over a
 * broker cluster the transaction is one broker transaction on each broker the checkpoint's records
 * went to (on a replicated stream, one transaction in each streamlet's scope it wrote to, which
 * follows the streamlet's leader through a failover: its parts), committed in two phases: {@link
 * #prepareCommit} prepares every part (phase one), Flink's completed checkpoint, which holds the
 * parts as committables, is the coordinator's record of the decision, and the committer commits
 * every part (phase two), again after a failure from the restored checkpoint
 * (docs/flink-connector.md, "Exactly once over a broker cluster").
 *
 * <ul>
 *   <li>A transaction begins with the first record after the last prepare; {@link #prepareCommit}
 *       flushes and prepares it (TxnPrepare: it survives broker restarts and never expires) and
 *       hands its parts to the committer, which commits them once the checkpoint is complete.
 *   <li>The state is (own id, highest prepared serial per part). On a restore every restored id is
 *       initialised in every part with {@code keep = its serial there}: its owner (a zombie of the
 *       failed run) is fenced, its transactions after the checkpoint are aborted, those up to it
 *       stay prepared for the restored committables. An id of another subtask or parallelism is
 *       taken over by whichever writer restores its state.
 *   <li>On a fresh start (no restored checkpoint) nothing needs keeping: the ids of the prefix that
 *       a current writer does not use (a previous run of other parallelism) are listed with TxnList
 *       and initialised with {@code keep = 0} by one writer each, and each writer's own id is too.
 * </ul>
 */
@Internal
public final class TransactionalNearstreamWriter<IN>
        extends NearstreamWriter<IN, NearstreamTransactionalProducer> {

    private static final Logger LOG = LoggerFactory.getLogger(TransactionalNearstreamWriter.class);

    private final String prefix;

    /**
     * Per part (broker, or streamlet of a replicated stream), the highest serial whose transaction
     * a committer may still commit; the state.
     */
    private final Map<Integer, Long> keepThrough = new TreeMap<>();

    public TransactionalNearstreamWriter(
            WriterInitContext context,
            ProducerSettings settings,
            NearstreamRecordSerializationSchema<IN> serializer,
            String prefix,
            Collection<NearstreamWriterState> restored) {
        super(
                context,
                settings,
                serializer,
                openProducer(
                        settings,
                        () ->
                                new NearstreamTransactionalProducer(
                                        settings.producerConfig(),
                                        TransactionalIds.of(
                                                prefix,
                                                context.getTaskInfo().getNumberOfParallelSubtasks(),
                                                context.getTaskInfo().getIndexOfThisSubtask()))));
        this.prefix = prefix;
        try {
            recover(context, restored);
        } catch (NearstreamClientException e) {
            producer.close(java.time.Duration.ZERO);
            throw failure(e);
        }
    }

    private void recover(WriterInitContext context, Collection<NearstreamWriterState> restored) {
        String own = producer.transactionalId();
        int parallelism = context.getTaskInfo().getNumberOfParallelSubtasks();
        int subtask = context.getTaskInfo().getIndexOfThisSubtask();
        Map<Integer, Long> keepOwn = new TreeMap<>();
        for (NearstreamWriterState state : restored) {
            Map<Integer, Long> keep = keptParts(state);
            if (state.transactionalId().equals(own)) {
                keep.forEach((part, s) -> keepOwn.merge(part, s, Math::max));
            } else {
                LOG.info(
                        "Taking over transactional id {} (prepared through serials {} by part)"
                                + " from the restored state",
                        state.transactionalId(),
                        keep);
                producer.fence(state.transactionalId(), keep);
            }
        }
        if (context.getRestoredCheckpointId().isEmpty()) {
            for (String id : leftoverIds(parallelism)) {
                if (TransactionalIds.responsibleSubtask(id, parallelism) == subtask) {
                    LOG.info("Aborting the transactions of {}, left by an earlier run", id);
                    producer.fence(id, Map.of());
                }
            }
        }
        Map<Integer, Long> epochs = producer.initTransactions(keepOwn);
        keepThrough.putAll(keepOwn);
        LOG.info(
                "Writer {} is at epochs {} by {}, keeping prepared through {}",
                own,
                epochs,
                producer.streamletScopes() ? "streamlet" : "broker",
                keepOwn);
    }

    /**
     * The restored serials to keep, by part. A state whose parts are of the other kind (brokers for
     * a replicated stream, or streamlets for one without replication: the stream was created again
     * with another replication) names no transaction the stream can hold now, and taking a broker
     * id for a streamlet would keep a transaction of the wrong part: nothing of it is kept.
     */
    private Map<Integer, Long> keptParts(NearstreamWriterState state) {
        if (state.streamletScopes() == producer.streamletScopes()) {
            return state.lastPreparedSerialByPart();
        }
        LOG.warn(
                "The restored state of transactional id {} keeps serials {} by {}, but stream '{}'"
                        + " has transactions by {} now: keeping none of them",
                state.transactionalId(),
                state.lastPreparedSerialByPart(),
                state.streamletScopes() ? "streamlet" : "broker",
                settings.stream(),
                producer.streamletScopes() ? "streamlet" : "broker");
        return Map.of();
    }

    /** The ids of this prefix with open or prepared transactions that no current writer uses. */
    private Set<String> leftoverIds(int parallelism) {
        Set<String> ids = new TreeSet<>();
        for (TransactionInfo t : producer.listTransactions(prefix + "-")) {
            String id = t.transactionalId();
            if (TransactionalIds.isOfPrefix(id, prefix)
                    && !TransactionalIds.isUsedBy(id, prefix, parallelism)) {
                ids.add(id);
            }
        }
        return ids;
    }

    @Override
    protected void beforeSend() {
        if (!producer.inTransaction()) {
            producer.beginTransaction();
        }
    }

    /** Flushes at checkpoints and at the end: prepare flushes too, this fails earlier. */
    @Override
    public void flush(boolean endOfInput) {
        if (producer.inTransaction()) {
            flushProducer();
        }
    }

    @Override
    public Collection<NearstreamCommittable> prepareCommit() {
        if (!producer.inTransaction()) {
            return List.of(); // no record since the last checkpoint
        }
        List<BrokerTxnRef> parts;
        try {
            parts = producer.prepareTransaction();
        } catch (NearstreamClientException e) {
            throw failure(e);
        }
        List<NearstreamCommittable> committables = new ArrayList<>(parts.size());
        for (BrokerTxnRef part : parts) {
            keepThrough.put(part.partKey(), part.ref().serial());
            committables.add(NearstreamCommittable.of(part));
        }
        return committables;
    }

    @Override
    public List<NearstreamWriterState> snapshotState(long checkpointId) {
        return List.of(
                new NearstreamWriterState(
                        producer.transactionalId(), producer.streamletScopes(), keepThrough));
    }

    @Override
    protected NearstreamException failure(NearstreamClientException e) {
        if (e.status() != StatusCode.TXN_FENCED) {
            return super.failure(e);
        }
        return new NearstreamException(
                "Nearstream sink: another writer took over transactional id '"
                        + producer.transactionalId()
                        + "' of stream '"
                        + settings.stream()
                        + "' (transactional id prefix '"
                        + prefix
                        + "'): another job, or a zombie of this one, writes with the same"
                        + " prefix. Give every exactly-once job its own transactional id prefix. ("
                        + e.getMessage()
                        + ")",
                e.status(),
                e);
    }
}
