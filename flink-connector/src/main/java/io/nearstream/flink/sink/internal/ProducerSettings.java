package io.nearstream.flink.sink.internal;

import io.nearstream.client.NearstreamClientOptions;
import io.nearstream.client.NearstreamPartitioner;
import io.nearstream.client.NearstreamProducerConfig;
import java.io.Serializable;
import java.time.Duration;
import org.apache.flink.annotation.Internal;

/**
 * The producer settings a sink carries to its writers and committers (serializable, unlike {@link
 * NearstreamProducerConfig}): where the broker is and how records are batched and retried.
 */
@Internal
public record ProducerSettings(
        String broker,
        String stream,
        int batchSizeBytes,
        long lingerMs,
        long deliveryTimeoutMs,
        long requestTimeoutMs,
        long retryBackoffMs)
        implements Serializable {

    private static final String CLIENT_NAME = "nearstream-flink-sink/0.1";

    /**
     * A producer config: records with a key go to the streamlet of its murmur2 hash, the others
     * round-robin.
     */
    public NearstreamProducerConfig producerConfig() {
        return NearstreamProducerConfig.builder(broker, stream)
                .clientOptions(clientOptions())
                .partitioner(NearstreamPartitioner::keyHash)
                .batchSizeBytes(batchSizeBytes)
                .linger(Duration.ofMillis(lingerMs))
                .deliveryTimeout(Duration.ofMillis(deliveryTimeoutMs))
                .retryBackoff(Duration.ofMillis(retryBackoffMs))
                .build();
    }

    public NearstreamClientOptions clientOptions() {
        return NearstreamClientOptions.builder()
                .requestTimeout(Duration.ofMillis(requestTimeoutMs))
                .clientName(CLIENT_NAME)
                .build();
    }

    public Duration retryBackoff() {
        return Duration.ofMillis(retryBackoffMs);
    }

    public Duration requestTimeout() {
        return Duration.ofMillis(requestTimeoutMs);
    }
}
