package io.nearstream.flink.sink;

import io.nearstream.flink.sink.internal.NearstreamCommittable;
import io.nearstream.flink.sink.internal.NearstreamCommittableSerializer;
import io.nearstream.flink.sink.internal.NearstreamCommitter;
import io.nearstream.flink.sink.internal.NearstreamWriter;
import io.nearstream.flink.sink.internal.NearstreamWriterState;
import io.nearstream.flink.sink.internal.NearstreamWriterStateSerializer;
import io.nearstream.flink.sink.internal.PlainNearstreamWriter;
import io.nearstream.flink.sink.internal.ProducerSettings;
import io.nearstream.flink.sink.internal.TransactionalNearstreamWriter;
import java.util.Collection;
import java.util.List;
import javax.annotation.Nullable;
import org.apache.flink.annotation.PublicEvolving;
import org.apache.flink.api.connector.sink2.Committer;
import org.apache.flink.api.connector.sink2.CommitterInitContext;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SupportsCommitter;
import org.apache.flink.api.connector.sink2.SupportsWriterState;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * A Flink sink writing to a Nearstream stream, with the delivery guarantee of {@link
 * DeliveryGuarantee}: {@code NONE}, {@code AT_LEAST_ONCE} (the producer is flushed on every
 * checkpoint) or {@code EXACTLY_ONCE} (one broker transaction per checkpoint and writer, committed
 * when the checkpoint completes; readers never see records of a transaction that did not commit).
 *
 * <pre>{@code
 * NearstreamSink<Order> sink =
 *         NearstreamSink.<Order>builder()
 *                 .setBrokers("10.0.0.7:7420")
 *                 .setStream("orders")
 *                 .setRecordSerializer(
 *                         NearstreamRecordSerializationSchema.<Order>builder()
 *                                 .setValueSerializationSchema(new OrderSchema())
 *                                 .setKeySerializationSchema(o -> o.customer().getBytes(UTF_8))
 *                                 .build())
 *                 .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
 *                 .setTransactionalIdPrefix("orders-job")
 *                 .build();
 * orders.sinkTo(sink);
 * }</pre>
 *
 * <p>See {@link NearstreamSinkBuilder} for every setting and {@code docs/flink-connector.md} for
 * the transactional ids and what happens on recovery.
 *
 * @param <IN> the type of the elements
 */
@PublicEvolving
public class NearstreamSink<IN>
        implements Sink<IN>,
                SupportsWriterState<IN, NearstreamWriterState>,
                SupportsCommitter<NearstreamCommittable> {

    private static final long serialVersionUID = 1L;

    private final ProducerSettings settings;
    private final NearstreamRecordSerializationSchema<IN> serializer;
    private final DeliveryGuarantee deliveryGuarantee;
    @Nullable private final String transactionalIdPrefix;

    NearstreamSink(
            ProducerSettings settings,
            NearstreamRecordSerializationSchema<IN> serializer,
            DeliveryGuarantee deliveryGuarantee,
            @Nullable String transactionalIdPrefix) {
        this.settings = settings;
        this.serializer = serializer;
        this.deliveryGuarantee = deliveryGuarantee;
        this.transactionalIdPrefix = transactionalIdPrefix;
    }

    public static <IN> NearstreamSinkBuilder<IN> builder() {
        return new NearstreamSinkBuilder<>();
    }

    public DeliveryGuarantee getDeliveryGuarantee() {
        return deliveryGuarantee;
    }

    @Override
    public NearstreamWriter<IN, ?> createWriter(WriterInitContext context) {
        return restoreWriter(context, List.of());
    }

    @Override
    public NearstreamWriter<IN, ?> restoreWriter(
            WriterInitContext context, Collection<NearstreamWriterState> recoveredState) {
        if (deliveryGuarantee == DeliveryGuarantee.EXACTLY_ONCE) {
            return new TransactionalNearstreamWriter<>(
                    context, settings, serializer, transactionalIdPrefix, recoveredState);
        }
        return new PlainNearstreamWriter<>(context, settings, serializer, deliveryGuarantee);
    }

    @Override
    public SimpleVersionedSerializer<NearstreamWriterState> getWriterStateSerializer() {
        return new NearstreamWriterStateSerializer();
    }

    @Override
    public Committer<NearstreamCommittable> createCommitter(CommitterInitContext context) {
        return new NearstreamCommitter(settings);
    }

    @Override
    public SimpleVersionedSerializer<NearstreamCommittable> getCommittableSerializer() {
        return new NearstreamCommittableSerializer();
    }
}
