package io.nearstream.flink.source;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NearstreamClientOptions;
import io.nearstream.client.NettyNearstreamClient;
import java.time.Duration;
import org.apache.flink.annotation.Internal;

/** Opens {@link NettyNearstreamClient}s named after the connector, with its request timeout. */
@Internal
final class DefaultNearstreamClientFactory implements NearstreamClientFactory {

    private static final long serialVersionUID = 1L;

    private final long requestTimeoutMs;

    DefaultNearstreamClientFactory(long requestTimeoutMs) {
        this.requestTimeoutMs = requestTimeoutMs;
    }

    @Override
    public NearstreamClient create(String address) {
        return NettyNearstreamClient.connect(
                address,
                NearstreamClientOptions.builder()
                        .requestTimeout(Duration.ofMillis(requestTimeoutMs))
                        .clientName("nearstream-flink-source/0.1")
                        .build());
    }
}
