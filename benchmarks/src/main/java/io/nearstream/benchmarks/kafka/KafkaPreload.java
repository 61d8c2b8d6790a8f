package io.nearstream.benchmarks.kafka;

import java.util.Map;
import org.apache.kafka.common.TopicPartition;

/**
 * Fills a new topic with records for a benchmark or job to read: {@link KafkaProducerPerf}'s
 * producer with a record count, so record {@code i} carries {@code i} ({@link IndexedRecords}), the
 * content {@code PreloadedStream} gives Nearstream's streams.
 */
public final class KafkaPreload {

    private KafkaPreload() {}

    /**
     * Creates {@code topic} with {@code partitions} partitions and writes {@code records} records
     * of {@code recordBytes} bytes to it, in producer batches of {@code chunkBytes}.
     *
     * @return the log-end offset of every partition after the load; they add up to {@code records}
     */
    public static Map<TopicPartition, Long> load(
            KafkaBroker broker,
            String topic,
            int partitions,
            long records,
            int recordBytes,
            int chunkBytes)
            throws Exception {
        broker.createTopic(topic, partitions);
        KafkaPerfResult result =
                KafkaProducerPerf.runQuietly(
                        KafkaPerfOptions.exactly(
                                broker.bootstrapServers(),
                                topic,
                                1,
                                partitions,
                                records,
                                recordBytes,
                                chunkBytes));
        Map<TopicPartition, Long> ends = broker.endOffsets(topic);
        long stored = ends.values().stream().mapToLong(Long::longValue).sum();
        if (stored != records) {
            // acks=1 without idempotence: a retried request may have been written twice.
            throw new IllegalStateException(
                    "topic " + topic + " holds " + stored + " records after loading " + records);
        }
        System.out.printf(
                "# pre-loaded %,d records of %d B into Kafka topic %s (%d partitions, batch.size"
                        + " %d B) in %.2f s; %s, started in %.2f s%n",
                records,
                recordBytes,
                topic,
                partitions,
                chunkBytes,
                result.elapsedSeconds(),
                broker,
                broker.startupTime().toMillis() / 1e3);
        return ends;
    }
}
