package io.nearstream.flink.sink.internal;

import io.nearstream.client.BatchingProducer;
import io.nearstream.client.NearstreamClientException;
import io.nearstream.client.RecordBatcher;
import io.nearstream.client.RecordPosition;
import io.nearstream.client.SendCallback;
import io.nearstream.client.StatusCode;
import io.nearstream.flink.common.ConnectorChecks;
import io.nearstream.flink.sink.NearstreamRecordSerializationSchema;
import io.nearstream.flink.sink.NearstreamSinkContext;
import io.nearstream.flink.sink.NearstreamSinkRecord;
import io.nearstream.flink.source.NearstreamException;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.function.Supplier;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.common.operators.ProcessingTimeService;
import org.apache.flink.api.connector.sink2.CommittingSinkWriter;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.groups.SinkWriterMetricGroup;

/**
 * What the sink's writers share: serializing elements, handing them to the producer, the FLIP-33
 * metrics ({@code numRecordsOut}, {@code numBytesOut}, {@code numRecordsOutErrors}, {@code
 * currentSendTime}), and failing the task on a record the producer could not deliver. {@link
 * PlainNearstreamWriter} (NONE, AT_LEAST_ONCE) and {@link TransactionalNearstreamWriter}
 * (EXACTLY_ONCE) add when to flush and what to commit.
 *
 * <p>Every writer is stateful and committing, because the sink supports both; only the exactly-once
 * writer has state and committables.
 *
 * @param <IN> the type of the elements
 * @param <P> the producer
 */
@Internal
public abstract class NearstreamWriter<IN, P extends BatchingProducer>
        implements StatefulSinkWriter<IN, NearstreamWriterState>,
                CommittingSinkWriter<IN, NearstreamCommittable> {

    /**
     * How long closing waits for the producer: on the normal path everything was flushed already
     * (end of input, or a checkpoint's prepare), so only a failing or cancelled task waits, and
     * what it loses is replayed or aborted anyway.
     */
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(5);

    protected final ProducerSettings settings;
    protected final P producer;
    private final NearstreamRecordSerializationSchema<IN> serializer;
    private final NearstreamSinkContext sinkContext;
    private final Counter numRecordsOut;
    private final Counter numBytesOut;
    private final Counter numRecordsOutErrors;
    private final SendCallback callback = this::onCompletion;

    /**
     * Batches records on the task thread and hands chunks to the producer (null with {@code
     * linger.ms} 0: records go to the producer one by one). Everything that touches it runs in the
     * task's mailbox: {@link #write}, the linger timer, flush, the transaction methods and close.
     */
    @Nullable private final RecordBatcher batcher;

    private final ProcessingTimeService timers;
    private final long lingerMs;

    /** Whether a linger timer is registered (a record went into the batcher since it last ran). */
    private boolean lingerTimerArmed;

    private boolean closed;

    /** The first record the producer gave up on; fails the task at the next call. */
    @Nullable private volatile Exception asyncError;

    protected NearstreamWriter(
            WriterInitContext context,
            ProducerSettings settings,
            NearstreamRecordSerializationSchema<IN> serializer,
            P producer) {
        this.settings = settings;
        this.producer = producer;
        this.serializer = serializer;
        int subtask = context.getTaskInfo().getIndexOfThisSubtask();
        int parallelism = context.getTaskInfo().getNumberOfParallelSubtasks();
        int streamlets = producer.streamlets();
        this.sinkContext =
                new NearstreamSinkContext() {
                    @Override
                    public int streamlets() {
                        return streamlets;
                    }

                    @Override
                    public int subtaskIndex() {
                        return subtask;
                    }

                    @Override
                    public int parallelism() {
                        return parallelism;
                    }
                };
        SinkWriterMetricGroup metrics = context.metricGroup();
        this.numRecordsOut = metrics.getNumRecordsSendCounter();
        this.numBytesOut = metrics.getNumBytesSendCounter();
        this.numRecordsOutErrors = metrics.getNumRecordsOutErrorsCounter();
        metrics.setCurrentSendTimeGauge(producer::lastRequestMillis);
        this.timers = context.getProcessingTimeService();
        this.lingerMs = producer.config().linger().toMillis();
        this.batcher = lingerMs > 0 ? producer.newRecordBatcher() : null;
        try {
            serializer.open(context.asSerializationSchemaInitializationContext(), sinkContext);
        } catch (Exception e) {
            producer.close(Duration.ZERO);
            throw new NearstreamException(
                    "the record serialization schema failed to open", null, e);
        }
    }

    /**
     * Opens a producer, explaining a failure (broker unreachable, no such stream) in terms of the
     * sink's settings.
     */
    protected static <P extends BatchingProducer> P openProducer(
            ProducerSettings settings, Supplier<P> open) {
        try {
            return open.get();
        } catch (NearstreamClientException e) {
            throw failure("cannot open", settings, e);
        }
    }

    /** Called before each element is sent (the exactly-once writer begins its transaction). */
    protected void beforeSend() {}

    @Override
    public void write(IN element, Context context) {
        checkAsyncError();
        NearstreamSinkRecord record =
                serializer.serialize(element, sinkContext, context.timestamp());
        if (record == null) {
            return;
        }
        int streamlet = record.streamlet();
        if (streamlet >= sinkContext.streamlets()) {
            throw new NearstreamException(
                    "the record serialization schema picked streamlet "
                            + streamlet
                            + " of stream '"
                            + settings.stream()
                            + "', which has "
                            + sinkContext.streamlets(),
                    StatusCode.STREAMLET_NOT_FOUND,
                    null);
        }
        try {
            beforeSend();
            if (batcher == null) {
                sendDirectly(streamlet, record);
            } else {
                if (streamlet == NearstreamSinkRecord.ANY_STREAMLET) {
                    batcher.send(record.key(), record.value(), record.timestampMs(), callback);
                } else {
                    batcher.sendTo(streamlet, record.value(), record.timestampMs(), callback);
                }
                if (!lingerTimerArmed) {
                    lingerTimerArmed = true;
                    timers.registerTimer(
                            timers.getCurrentProcessingTime() + lingerMs, this::onLinger);
                }
            }
        } catch (NearstreamClientException e) {
            throw failure(e);
        }
        numRecordsOut.inc();
        numBytesOut.inc(record.size());
    }

    /** With {@code linger.ms} 0: the record goes to the producer, which batches it. */
    private void sendDirectly(int streamlet, NearstreamSinkRecord record) {
        if (streamlet == NearstreamSinkRecord.ANY_STREAMLET) {
            producer.send(record.key(), record.value(), record.timestampMs(), callback);
        } else {
            producer.sendTo(streamlet, record.value(), record.timestampMs(), callback);
        }
    }

    /** The linger timer: the chunks being filled go to the producer's sender. */
    private void onLinger(long time) {
        lingerTimerArmed = false;
        if (closed || batcher == null) {
            return;
        }
        try {
            batcher.handOverAll();
        } catch (NearstreamClientException e) {
            throw failure(e);
        }
    }

    /** Flushes the producer and fails on any record it could not deliver. */
    protected final void flushProducer() {
        try {
            producer.flush();
        } catch (NearstreamClientException e) {
            throw failure(e);
        }
        checkAsyncError();
    }

    private void onCompletion(@Nullable RecordPosition position, @Nullable Exception error) {
        if (error != null) {
            numRecordsOutErrors.inc();
            if (asyncError == null) {
                asyncError = error;
            }
        }
    }

    private void checkAsyncError() {
        Exception e = asyncError;
        if (e != null) {
            throw failure(
                    e instanceof NearstreamClientException nce
                            ? nce
                            : new NearstreamClientException(StatusCode.INTERNAL, e.toString(), e));
        }
    }

    /** The task's failure for a producer failure: names the stream, the broker and the cause. */
    protected NearstreamException failure(NearstreamClientException e) {
        return failure("failed to write to", settings, e);
    }

    private static NearstreamException failure(
            String what, ProducerSettings settings, NearstreamClientException e) {
        return new NearstreamException(
                "Nearstream sink "
                        + what
                        + " stream '"
                        + settings.stream()
                        + (ConnectorChecks.isCluster(settings.broker())
                                ? "' at the brokers "
                                : "' at broker ")
                        + settings.broker()
                        + ": "
                        + e.getMessage(),
                e.status(),
                e);
    }

    @Override
    public Collection<NearstreamCommittable> prepareCommit() {
        return List.of();
    }

    @Override
    public List<NearstreamWriterState> snapshotState(long checkpointId) {
        return List.of();
    }

    @Override
    public void close() {
        closed = true;
        producer.close(CLOSE_TIMEOUT);
    }
}
