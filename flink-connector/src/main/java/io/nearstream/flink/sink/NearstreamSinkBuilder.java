package io.nearstream.flink.sink;

import static org.apache.flink.util.Preconditions.checkArgument;
import static org.apache.flink.util.Preconditions.checkNotNull;
import static org.apache.flink.util.Preconditions.checkState;

import io.nearstream.client.NearstreamTransactionalProducer;
import io.nearstream.flink.common.ConnectorChecks;
import io.nearstream.flink.sink.internal.ProducerSettings;
import io.nearstream.flink.sink.internal.TransactionalIds;
import javax.annotation.Nullable;
import org.apache.flink.annotation.PublicEvolving;
import org.apache.flink.connector.base.DeliveryGuarantee;

/**
 * Builds a {@link NearstreamSink}. Required: {@link #setBrokers}, {@link #setStream}, {@link
 * #setRecordSerializer}, and for {@link DeliveryGuarantee#EXACTLY_ONCE} {@link
 * #setTransactionalIdPrefix}. Defaults: {@link DeliveryGuarantee#AT_LEAST_ONCE}, chunks of up to 64
 * KiB lingering 5 ms, a 2-minute delivery timeout, 30-second requests, 100 ms retry back-off.
 *
 * @param <IN> the type of the elements
 */
@PublicEvolving
public class NearstreamSinkBuilder<IN> {

    private String[] brokers;
    private String stream;
    private NearstreamRecordSerializationSchema<IN> serializer;
    private DeliveryGuarantee deliveryGuarantee = DeliveryGuarantee.AT_LEAST_ONCE;
    @Nullable private String transactionalIdPrefix;
    private int batchSizeBytes = 64 * 1024;
    private long lingerMs = 5;
    private long deliveryTimeoutMs = 120_000;
    private long requestTimeoutMs = 30_000;
    private long retryBackoffMs = 100;

    NearstreamSinkBuilder() {}

    /**
     * The broker to write to, as {@code host:port}, or several brokers of a cluster (each a {@code
     * host:port}, or one comma-separated bootstrap list): records then go to the broker of their
     * streamlet (docs/cluster.md). Over a cluster, an {@code EXACTLY_ONCE} checkpoint's transaction
     * is one broker transaction on each broker it wrote to, committed in two phases.
     */
    public NearstreamSinkBuilder<IN> setBrokers(String... brokers) {
        this.brokers = checkNotNull(brokers, "brokers").clone();
        return this;
    }

    /** The stream to write to; it must exist. */
    public NearstreamSinkBuilder<IN> setStream(String stream) {
        this.stream = checkNotNull(stream, "stream");
        return this;
    }

    /** How elements become records (see {@link NearstreamRecordSerializationSchema#builder()}). */
    public NearstreamSinkBuilder<IN> setRecordSerializer(
            NearstreamRecordSerializationSchema<IN> serializer) {
        this.serializer = checkNotNull(serializer, "record serializer");
        return this;
    }

    /** {@code NONE}, {@code AT_LEAST_ONCE} (the default) or {@code EXACTLY_ONCE}. */
    public NearstreamSinkBuilder<IN> setDeliveryGuarantee(DeliveryGuarantee guarantee) {
        this.deliveryGuarantee = checkNotNull(guarantee, "delivery guarantee");
        return this;
    }

    /**
     * The prefix of the exactly-once writers' transactional ids ({@code
     * <prefix>-<parallelism>-<subtask>}). Unique per job and stream: a second job with the same
     * prefix fences this one's writers (and is fenced back on restart).
     */
    public NearstreamSinkBuilder<IN> setTransactionalIdPrefix(String prefix) {
        this.transactionalIdPrefix = checkNotNull(prefix, "transactional id prefix");
        return this;
    }

    /** Target chunk size, header included (default 64 KiB); a larger record gets its own chunk. */
    public NearstreamSinkBuilder<IN> setBatchSizeBytes(int bytes) {
        this.batchSizeBytes = bytes;
        return this;
    }

    /** How long a chunk waits for more records before it is sent (default 5 ms). */
    public NearstreamSinkBuilder<IN> setLingerMs(long ms) {
        this.lingerMs = ms;
        return this;
    }

    /** How long a record may take to be stored, retries included, before the job fails. */
    public NearstreamSinkBuilder<IN> setDeliveryTimeoutMs(long ms) {
        this.deliveryTimeoutMs = ms;
        return this;
    }

    /** How long one request waits for the broker's answer (default 30 s). */
    public NearstreamSinkBuilder<IN> setRequestTimeoutMs(long ms) {
        this.requestTimeoutMs = ms;
        return this;
    }

    /** The pause before a retriable failure is retried (default 100 ms). */
    public NearstreamSinkBuilder<IN> setRetryBackoffMs(long ms) {
        this.retryBackoffMs = ms;
        return this;
    }

    /** Checks the settings and builds the sink; a wrong setting is explained. */
    public NearstreamSink<IN> build() {
        String broker = ConnectorChecks.brokers(brokers);
        ConnectorChecks.stream(stream);
        checkState(
                serializer != null,
                "No record serializer set: call setRecordSerializer(...), e.g."
                        + " NearstreamRecordSerializationSchema.builder()"
                        + ".setValueSerializationSchema(new SimpleStringSchema()).build()");
        if (deliveryGuarantee == DeliveryGuarantee.EXACTLY_ONCE) {
            checkState(
                    transactionalIdPrefix != null,
                    "EXACTLY_ONCE needs a transactional id prefix, unique per job: call"
                            + " setTransactionalIdPrefix(...)");
            checkArgument(!transactionalIdPrefix.isEmpty(), "The transactional id prefix is empty");
            try {
                NearstreamTransactionalProducer.checkTransactionalId(
                        TransactionalIds.longest(transactionalIdPrefix));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(
                        "Transactional id prefix '"
                                + transactionalIdPrefix
                                + "' cannot make valid ids <prefix>-<parallelism>-<subtask>: "
                                + e.getMessage(),
                        e);
            }
        }
        ProducerSettings settings =
                new ProducerSettings(
                        broker,
                        stream,
                        batchSizeBytes,
                        lingerMs,
                        deliveryTimeoutMs,
                        requestTimeoutMs,
                        retryBackoffMs);
        // The producer's and client's own checks of the sizes and durations, now rather than
        // when the job runs.
        settings.producerConfig();
        return new NearstreamSink<>(settings, serializer, deliveryGuarantee, transactionalIdPrefix);
    }
}
