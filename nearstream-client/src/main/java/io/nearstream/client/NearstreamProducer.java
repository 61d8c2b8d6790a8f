package io.nearstream.client;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Sends records to a stream, Kafka-producer style, with Append requests: the batching, ordering,
 * idempotence and retries of {@link BatchingProducer}. Records are visible to readers as soon as
 * their chunk is stored; {@link NearstreamTransactionalProducer} makes them visible per transaction
 * instead.
 *
 * <pre>{@code
 * NearstreamProducerConfig config =
 *         NearstreamProducerConfig.builder("127.0.0.1:7420", "clicks").build();
 * try (NearstreamProducer producer = new NearstreamProducer(config)) {
 *     producer.send("hello".getBytes(UTF_8));
 *     producer.send(userId, event).thenAccept(pos -> log(pos.streamlet(), pos.chunk()));
 *     producer.flush();
 * }
 * }</pre>
 *
 * <p>Thread-safe.
 */
public final class NearstreamProducer extends BatchingProducer {

    /** Connects (unless the config carries a client) and looks up the stream's streamlets. */
    public NearstreamProducer(NearstreamProducerConfig config) {
        super(config, config.producerIdForNewProducer(), "nearstream-producer-" + config.stream());
    }

    @Override
    CompletableFuture<List<AppendResult>> sendChunks(int[] streamlets, List<byte[]> chunks) {
        return client().append(stream(), streamlets, chunks);
    }
}
