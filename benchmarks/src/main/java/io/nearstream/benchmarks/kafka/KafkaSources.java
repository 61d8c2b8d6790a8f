package io.nearstream.benchmarks.kafka;

import java.util.Properties;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.KafkaSourceBuilder;
import org.apache.flink.connector.kafka.source.KafkaSourceOptions;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The Flink Kafka sources of the benchmarks' {@code kafka} mode: {@code flink-connector-kafka}'s
 * {@link KafkaSource} over one topic, from the earliest offsets, every record's value as its raw
 * {@code byte[]} (what the Nearstream sources hand to the same jobs). Consumer settings stay at
 * Kafka's and the connector's defaults; {@link #splitReaderProperties} gives a stand-alone split
 * reader the same ones.
 *
 * <pre>{@code
 * DataStream<byte[]> records =
 *         env.fromSource(
 *                 KafkaSources.bounded(kafka.bootstrapServers(), "bench"),
 *                 WatermarkStrategy.noWatermarks(),
 *                 "kafka");
 * }</pre>
 */
public final class KafkaSources {

    private KafkaSources() {}

    /**
     * A bounded source: reads each partition from its earliest offset up to the latest offset it
     * had when the job started, then finishes.
     */
    public static KafkaSource<byte[]> bounded(String bootstrapServers, String topic) {
        return builder(bootstrapServers, topic).setBounded(OffsetsInitializer.latest()).build();
    }

    /** An unbounded source from the earliest offsets (records written while the job runs too). */
    public static KafkaSource<byte[]> continuous(String bootstrapServers, String topic) {
        return builder(bootstrapServers, topic).build();
    }

    /** The common settings, for callers that add their own (stopping offsets, properties). */
    public static KafkaSourceBuilder<byte[]> builder(String bootstrapServers, String topic) {
        return KafkaSource.<byte[]>builder()
                .setBootstrapServers(bootstrapServers)
                .setTopics(topic)
                .setGroupId(groupId(topic))
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setDeserializer(
                        KafkaRecordDeserializationSchema.valueOnly(ByteArrayDeserializer.class));
    }

    /**
     * The consumer properties {@link KafkaSourceBuilder} hands a source's split readers for {@link
     * #builder}'s settings, for a {@code KafkaPartitionSplitReader} run without a source.
     *
     * @param clientIdPrefix the readers' {@code client.id} prefix (the subtask index is appended)
     */
    public static Properties splitReaderProperties(
            String bootstrapServers, String topic, String clientIdPrefix) {
        Properties p = new Properties();
        p.setProperty(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        p.setProperty(ConsumerConfig.GROUP_ID_CONFIG, groupId(topic));
        p.setProperty(
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
                ByteArrayDeserializer.class.getName());
        p.setProperty(
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
                ByteArrayDeserializer.class.getName());
        p.setProperty(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.setProperty(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.setProperty(KafkaSourceOptions.CLIENT_ID_PREFIX.key(), clientIdPrefix);
        return p;
    }

    private static String groupId(String topic) {
        return "nearstream-bench-" + topic;
    }
}
