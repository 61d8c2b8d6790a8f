package io.nearstream.benchmarks.sink;

import io.nearstream.benchmarks.kafka.IndexedRecords;
import io.nearstream.benchmarks.sink.SinkRunProbe.TxnTrace;
import io.nearstream.flink.sink.NearstreamSink;
import io.nearstream.flink.sink.internal.NearstreamCommittable;
import io.nearstream.flink.sink.internal.NearstreamWriter;
import io.nearstream.flink.sink.internal.NearstreamWriterState;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.connector.sink2.Committer;
import org.apache.flink.api.connector.sink2.CommitterInitContext;
import org.apache.flink.api.connector.sink2.CommittingSinkWriter;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.SupportsCommitter;
import org.apache.flink.api.connector.sink2.SupportsWriterState;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * {@link NearstreamSink} unchanged, with its writer and committer wrapped to trace each
 * exactly-once transaction for the latency figures: the writer notes the generator indexes of the
 * first and last record of each transaction it prepares, the checkpoint that prepared it and how
 * long its flush and prepare took at the barrier, the committer when its {@code commit} call began
 * (the moment the sink learns that the checkpoint completed: Flink's committer operator commits
 * from its {@code notifyCheckpointComplete}) and when it returned. It has the same interfaces as
 * the sink it wraps, so Flink builds the same topology (writer, committer) for it. The wrappers
 * cost a field store per record.
 */
final class TracingNearstreamSink
        implements Sink<byte[]>,
                SupportsWriterState<byte[], NearstreamWriterState>,
                SupportsCommitter<NearstreamCommittable> {

    private static final long serialVersionUID = 1L;

    private final NearstreamSink<byte[]> sink;
    private final String runId;

    TracingNearstreamSink(NearstreamSink<byte[]> sink, String runId) {
        this.sink = sink;
        this.runId = runId;
    }

    @Override
    public StatefulSinkWriter<byte[], NearstreamWriterState> createWriter(
            WriterInitContext context) {
        return new Writer(sink.createWriter(context), SinkRunProbe.of(runId));
    }

    @Override
    public StatefulSinkWriter<byte[], NearstreamWriterState> restoreWriter(
            WriterInitContext context, Collection<NearstreamWriterState> recoveredState) {
        return new Writer(sink.restoreWriter(context, recoveredState), SinkRunProbe.of(runId));
    }

    @Override
    public SimpleVersionedSerializer<NearstreamWriterState> getWriterStateSerializer() {
        return sink.getWriterStateSerializer();
    }

    @Override
    public Committer<NearstreamCommittable> createCommitter(CommitterInitContext context) {
        return new TimedCommitter(sink.createCommitter(context), SinkRunProbe.of(runId));
    }

    @Override
    public SimpleVersionedSerializer<NearstreamCommittable> getCommittableSerializer() {
        return sink.getCommittableSerializer();
    }

    private static final class Writer
            implements StatefulSinkWriter<byte[], NearstreamWriterState>,
                    CommittingSinkWriter<byte[], NearstreamCommittable> {

        private final NearstreamWriter<byte[], ?> delegate;
        private final SinkRunProbe probe;
        private final List<TxnTrace> preparedSinceSnapshot = new ArrayList<>();
        // The generator makes a new array per record, so holding on to them is safe.
        private byte[] first;
        private byte[] last;
        private long flushNanos;

        Writer(NearstreamWriter<byte[], ?> delegate, SinkRunProbe probe) {
            this.delegate = delegate;
            this.probe = probe;
        }

        @Override
        public void write(byte[] element, Context context)
                throws IOException, InterruptedException {
            if (first == null) {
                first = element;
            }
            last = element;
            delegate.write(element, context);
        }

        @Override
        public void flush(boolean endOfInput) throws IOException, InterruptedException {
            long start = System.nanoTime();
            delegate.flush(endOfInput);
            flushNanos = System.nanoTime() - start;
        }

        @Override
        public void writeWatermark(Watermark watermark) throws IOException, InterruptedException {
            delegate.writeWatermark(watermark);
        }

        @Override
        public Collection<NearstreamCommittable> prepareCommit()
                throws IOException, InterruptedException {
            long start = System.nanoTime();
            Collection<NearstreamCommittable> committables = delegate.prepareCommit();
            long prepareNanos = System.nanoTime() - start;
            for (NearstreamCommittable c : committables) {
                TxnTrace t = probe.txn(c.transactionalId(), c.serial());
                t.flushNanos = flushNanos; // Flink flushes the writer right before prepareCommit
                t.prepareNanos = prepareNanos;
                if (first != null) {
                    t.firstIndex = IndexedRecords.index(first);
                    t.lastIndex = IndexedRecords.index(last);
                }
                preparedSinceSnapshot.add(t);
            }
            first = null;
            last = null;
            return committables;
        }

        /**
         * Flink snapshots the writer right after {@link #prepareCommit}, with the checkpoint id.
         */
        @Override
        public List<NearstreamWriterState> snapshotState(long checkpointId) throws IOException {
            for (TxnTrace t : preparedSinceSnapshot) {
                t.checkpointId = checkpointId;
            }
            preparedSinceSnapshot.clear();
            return delegate.snapshotState(checkpointId);
        }

        @Override
        public void close() throws Exception {
            delegate.close();
        }
    }

    private static final class TimedCommitter implements Committer<NearstreamCommittable> {

        private final Committer<NearstreamCommittable> delegate;
        private final SinkRunProbe probe;

        TimedCommitter(Committer<NearstreamCommittable> delegate, SinkRunProbe probe) {
            this.delegate = delegate;
            this.probe = probe;
        }

        @Override
        public void commit(Collection<CommitRequest<NearstreamCommittable>> requests)
                throws IOException, InterruptedException {
            long start = System.nanoTime();
            delegate.commit(requests);
            long end = System.nanoTime();
            for (CommitRequest<NearstreamCommittable> r : requests) {
                NearstreamCommittable c = r.getCommittable();
                TxnTrace t = probe.txn(c.transactionalId(), c.serial());
                if (t.commitStartNanos == 0) { // a retried commit keeps its first start
                    t.commitStartNanos = start;
                }
                t.commitEndNanos = end;
            }
        }

        @Override
        public void close() throws Exception {
            delegate.close();
        }
    }
}
