package io.nearstream.flink.sink.internal;

import io.nearstream.client.NearstreamClientException;
import io.nearstream.client.NearstreamTransactionalProducer;
import io.nearstream.client.StatusCode;
import io.nearstream.client.TransactionInfo;
import io.nearstream.client.TxnRef;
import io.nearstream.flink.sink.NearstreamRecordSerializationSchema;
import io.nearstream.flink.source.NearstreamException;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The writer of {@code EXACTLY_ONCE}: one broker transaction per checkpoint, under the writer's own
 * transactional id {@code <prefix>-<parallelism>-<subtask>} ({@link TransactionalIds}).
 *
 * <ul>
 *   <li>A transaction begins with the first record after the last prepare; {@link #prepareCommit}
 *       flushes and prepares it (TxnPrepare: it survives broker restarts and never expires) and
 *       hands it to the committer, which commits it once the checkpoint is complete.
 *   <li>The state is (own id, highest prepared serial). On a restore every restored id is
 *       initialised with {@code keep = its serial}: its owner (a zombie of the failed run) is
 *       fenced, its transactions after the checkpoint are aborted, those up to it stay prepared for
 *       the restored committables. An id of another subtask or parallelism is taken over by
 *       whichever writer restores its state.
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

    /** The highest serial whose transaction a committer may still commit; the state. */
    private long keepThrough;

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
        long keepOwn = 0;
        for (NearstreamWriterState state : restored) {
            if (state.transactionalId().equals(own)) {
                keepOwn = Math.max(keepOwn, state.lastPreparedSerial());
            } else {
                LOG.info(
                        "Taking over transactional id {} (prepared through serial {}) from the"
                                + " restored state",
                        state.transactionalId(),
                        state.lastPreparedSerial());
                producer.fence(state.transactionalId(), state.lastPreparedSerial());
            }
        }
        if (context.getRestoredCheckpointId().isEmpty()) {
            for (String id : leftoverIds(parallelism)) {
                if (TransactionalIds.responsibleSubtask(id, parallelism) == subtask) {
                    LOG.info("Aborting the transactions of {}, left by an earlier run", id);
                    producer.fence(id, 0);
                }
            }
        }
        long epoch = producer.initTransactions(keepOwn);
        keepThrough = keepOwn;
        LOG.info("Writer {} is at epoch {}, keeping prepared through {}", own, epoch, keepOwn);
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
        if (producer.currentTransaction() == null) {
            producer.beginTransaction();
        }
    }

    /** Flushes at checkpoints and at the end: prepare flushes too, this fails earlier. */
    @Override
    public void flush(boolean endOfInput) {
        if (producer.currentTransaction() != null) {
            flushProducer();
        }
    }

    @Override
    public Collection<NearstreamCommittable> prepareCommit() {
        if (producer.currentTransaction() == null) {
            return List.of(); // no record since the last checkpoint
        }
        TxnRef ref;
        try {
            ref = producer.prepareTransaction();
        } catch (NearstreamClientException e) {
            throw failure(e);
        }
        keepThrough = ref.serial();
        return List.of(NearstreamCommittable.of(ref));
    }

    @Override
    public List<NearstreamWriterState> snapshotState(long checkpointId) {
        return List.of(new NearstreamWriterState(producer.transactionalId(), keepThrough));
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
