package io.nearstream.benchmarks.workloads;

import io.nearstream.client.NearstreamProducer;
import io.nearstream.client.NearstreamProducerConfig;
import io.nearstream.client.SendCallback;
import java.util.Properties;
import java.util.function.Consumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Where a benchmark producer thread sends its records: a Nearstream producer or a Kafka producer,
 * so the same generator feeds both systems. One sink per thread; errors of asynchronous sends go to
 * the failure callback.
 */
public interface EventSink extends AutoCloseable {

    void send(byte[] value, Consumer<Throwable> onFailure);

    /** Waits until everything sent is acknowledged. */
    void flush() throws Exception;

    @Override
    void close() throws Exception;

    /**
     * A Nearstream producer of its own (its own producer id), sending with a callback: no future
     * per record, and one callback for as long as the caller passes the same failure handler.
     */
    static EventSink nearstream(NearstreamProducerConfig config) {
        NearstreamProducer producer = new NearstreamProducer(config);
        return new EventSink() {
            private Consumer<Throwable> handler;
            private SendCallback callback;

            @Override
            public void send(byte[] value, Consumer<Throwable> onFailure) {
                if (onFailure != handler) {
                    handler = onFailure;
                    callback =
                            (pos, e) -> {
                                if (e != null) {
                                    onFailure.accept(e);
                                }
                            };
                }
                producer.send(value, callback);
            }

            @Override
            public void flush() {
                producer.flush();
            }

            @Override
            public void close() {
                producer.close();
            }
        };
    }

    /**
     * A Kafka producer with the settings of the Kafka baseline (acks=1, batch.size as the chunk
     * size, the same linger), records spread by Kafka's default partitioner (no key).
     */
    static EventSink kafka(String bootstrapServers, String topic, int batchBytes, long lingerMs) {
        return kafka(bootstrapServers, topic, batchBytes, lingerMs, false);
    }

    /**
     * As {@link #kafka(String, String, int, long)}; {@code idempotent}: {@code acks=all} with
     * Kafka's idempotent producer instead, so a retried request is never written twice — for data
     * whose results are checked exactly (the word-count corpus), not for the throughput baseline.
     */
    static EventSink kafka(
            String bootstrapServers,
            String topic,
            int batchBytes,
            long lingerMs,
            boolean idempotent) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        p.put(ProducerConfig.ACKS_CONFIG, idempotent ? "all" : "1");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, Boolean.toString(idempotent));
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, batchBytes);
        p.put(ProducerConfig.LINGER_MS_CONFIG, lingerMs);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p);
        return new EventSink() {
            @Override
            public void send(byte[] value, Consumer<Throwable> onFailure) {
                producer.send(
                        new ProducerRecord<>(topic, value),
                        (metadata, e) -> {
                            if (e != null) {
                                onFailure.accept(e);
                            }
                        });
            }

            @Override
            public void flush() {
                producer.flush();
            }

            @Override
            public void close() {
                producer.close();
            }
        };
    }
}
