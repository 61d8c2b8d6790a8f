package io.nearstream.benchmarks.kafka;

import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * One producer thread of {@link KafkaProducerPerf}: its own {@link KafkaProducer}, writing records
 * of {@link IndexedRecords} content to its share of the partitions. Producer {@code p} of {@code
 * Np} writes the records whose global index is {@code p, p + Np, p + 2 Np, ...}, so together they
 * write each index once; it counts the records the broker acknowledged.
 */
final class KafkaPerfProducer implements Runnable {

    /** Bytes of a Kafka record batch's header (magic v2). */
    private static final int BATCH_HEADER_BYTES = 61;

    /**
     * Bytes a record adds in a batch besides its value: length, attributes, timestamp and offset
     * deltas, key length, value length, header count (varints; generous, so a run of records never
     * overflows a batch).
     */
    private static final int RECORD_OVERHEAD_BYTES = 16;

    private final KafkaPerfOptions options;
    private final int number;
    private final int[] partitions;
    private final long quota;
    private final int recordsPerBatch;
    private final CountDownLatch ready;
    private final CountDownLatch go;
    private final AtomicBoolean stop;
    private final AtomicReference<Throwable> failure;
    private final AtomicLong acknowledged = new AtomicLong();
    private final Callback onAck;

    /**
     * @param options the run
     * @param number this producer's number, 0 to {@code options.producers() - 1}
     * @param topicPartitions partitions the run writes (the first ones of the topic)
     * @param ready counted down when the producer is connected and knows the topic's leaders
     * @param go released when producers may start
     * @param stop set to stop every producer (by the run, or by a producer that failed)
     * @param failure the first failure of any producer
     */
    KafkaPerfProducer(
            KafkaPerfOptions options,
            int number,
            int topicPartitions,
            CountDownLatch ready,
            CountDownLatch go,
            AtomicBoolean stop,
            AtomicReference<Throwable> failure) {
        this.options = options;
        this.number = number;
        this.partitions = share(number, options.producers(), topicPartitions);
        long records = options.records();
        this.quota =
                options.countsRecords()
                        ? records / options.producers()
                                + (number < records % options.producers() ? 1 : 0)
                        : Long.MAX_VALUE;
        this.recordsPerBatch =
                Math.max(
                        1,
                        (options.chunkBytes() - BATCH_HEADER_BYTES)
                                / (options.recordBytes() + RECORD_OVERHEAD_BYTES));
        this.ready = ready;
        this.go = go;
        this.stop = stop;
        this.failure = failure;
        this.onAck =
                (metadata, exception) -> {
                    if (exception == null) {
                        acknowledged.incrementAndGet();
                    } else {
                        fail(exception);
                    }
                };
    }

    /**
     * The partitions producer {@code p} of {@code np} writes: those with {@code s mod np == p}, or
     * partition {@code p mod ns} when there are more producers than partitions.
     */
    static int[] share(int p, int np, int ns) {
        if (np > ns) {
            return new int[] {p % ns};
        }
        List<Integer> mine = new ArrayList<>();
        for (int s = p; s < ns; s += np) {
            mine.add(s);
        }
        return mine.stream().mapToInt(Integer::intValue).toArray();
    }

    /** Records the broker acknowledged so far. */
    long acknowledged() {
        return acknowledged.get();
    }

    @Override
    public void run() {
        boolean counted = false;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(properties())) {
            // Fetch the topic's metadata now, so the first send does not wait for it.
            producer.partitionsFor(options.topic());
            ready.countDown();
            counted = true;
            go.await();
            produce(producer);
            producer.flush();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            fail(e);
        } catch (RuntimeException e) {
            fail(e);
        } finally {
            // Never leave the run waiting for a producer that failed while connecting.
            if (!counted) {
                ready.countDown();
            }
        }
    }

    private void produce(KafkaProducer<byte[], byte[]> producer) {
        byte[] value = IndexedRecords.template(options.recordBytes());
        double nanosPerRecord =
                options.rate() == 0 ? 0 : 1e9 * options.producers() / options.rate();
        long start = System.nanoTime();
        for (long k = 0; k < quota && !stop.get(); k++) {
            IndexedRecords.stamp(value, number + k * options.producers());
            // A batch's worth of records to one partition, then the next: Kafka's sticky
            // partitioning, which fills whole batches as nearstream-perf fills whole chunks.
            int partition = partitions[(int) ((k / recordsPerBatch) % partitions.length)];
            // send() copies the value into its batch before it returns: the array can be reused.
            producer.send(new ProducerRecord<>(options.topic(), partition, null, value), onAck);
            if (nanosPerRecord > 0) {
                long due = start + (long) ((k + 1) * nanosPerRecord);
                for (long now = System.nanoTime(); now < due; now = System.nanoTime()) {
                    LockSupport.parkNanos(due - now);
                }
            }
        }
    }

    private Properties properties() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, options.bootstrapServers());
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "kafka-producer-perf-" + number);
        p.put(ProducerConfig.ACKS_CONFIG, options.acks());
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, Integer.toString(options.chunkBytes()));
        p.put(ProducerConfig.LINGER_MS_CONFIG, Integer.toString(options.lingerMs()));
        p.put(
                ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION,
                Integer.toString(options.inflight()));
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, options.compression());
        // Idempotence needs acks=all; with acks 0 or 1 Kafka would refuse it, so say it plainly.
        p.put(
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
                Boolean.toString(options.acks().equals("all")));
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return p;
    }

    private void fail(Throwable t) {
        failure.compareAndSet(null, t);
        stop.set(true);
    }
}
