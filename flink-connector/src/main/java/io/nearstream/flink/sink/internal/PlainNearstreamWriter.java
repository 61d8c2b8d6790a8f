package io.nearstream.flink.sink.internal;

import io.nearstream.client.NearstreamProducer;
import io.nearstream.flink.sink.NearstreamRecordSerializationSchema;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.connector.base.DeliveryGuarantee;

/**
 * The writer of {@link DeliveryGuarantee#NONE} and {@link DeliveryGuarantee#AT_LEAST_ONCE}: Append
 * requests, records visible as soon as they are stored. At least once flushes the producer on every
 * checkpoint, so a completed checkpoint means every record before it is stored (a restart replays
 * the rest, possibly again); NONE does not wait for the broker at checkpoints.
 */
@Internal
public final class PlainNearstreamWriter<IN> extends NearstreamWriter<IN, NearstreamProducer> {

    private final boolean flushOnCheckpoint;

    public PlainNearstreamWriter(
            WriterInitContext context,
            ProducerSettings settings,
            NearstreamRecordSerializationSchema<IN> serializer,
            DeliveryGuarantee guarantee) {
        super(
                context,
                settings,
                serializer,
                openProducer(settings, () -> new NearstreamProducer(settings.producerConfig())));
        this.flushOnCheckpoint = guarantee == DeliveryGuarantee.AT_LEAST_ONCE;
    }

    /**
     * Called before each checkpoint's barrier goes on and at the end of the input: there the
     * records are flushed whatever the guarantee, so a finished job has delivered them all.
     */
    @Override
    public void flush(boolean endOfInput) {
        if (flushOnCheckpoint || endOfInput) {
            flushProducer();
        }
    }
}
