package io.nearstream.flink.source;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NearstreamClientOptions;
import java.time.Duration;
import org.apache.flink.annotation.Internal;

/**
 * Opens clients named after the connector, with its request timeout: to one broker, or to a cluster
 * when the address is a comma-separated bootstrap list ({@link NearstreamClient#connect}).
 */
@Internal
final class DefaultNearstreamClientFactory implements NearstreamClientFactory {

    private static final long serialVersionUID = 1L;

    private final long requestTimeoutMs;

    DefaultNearstreamClientFactory(long requestTimeoutMs) {
        this.requestTimeoutMs = requestTimeoutMs;
    }

    @Override
    public NearstreamClient create(String address) {
        return NearstreamClient.connect(
                address,
                NearstreamClientOptions.builder()
                        .requestTimeout(Duration.ofMillis(requestTimeoutMs))
                        .clientName("nearstream-flink-source/0.1")
                        .build());
    }
}
