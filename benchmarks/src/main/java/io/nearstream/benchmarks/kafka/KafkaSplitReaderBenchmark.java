package io.nearstream.benchmarks.kafka;

import io.nearstream.benchmarks.BenchmarkBase;
import io.nearstream.benchmarks.FetchCounters;
import io.nearstream.benchmarks.PreloadedStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsAddition;
import org.apache.flink.connector.kafka.source.metrics.KafkaSourceReaderMetrics;
import org.apache.flink.connector.kafka.source.reader.KafkaPartitionSplitReader;
import org.apache.flink.connector.kafka.source.split.KafkaPartitionSplit;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.Blackhole;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;

/**
 * Kafka's split reader alone, the counterpart of {@code PullReaderBenchmark}: one {@link
 * KafkaPartitionSplitReader} (flink-connector-kafka's, as a {@code KafkaSource} reader runs it)
 * reads a topic pre-loaded with the same records as the pull benchmark's stream, one bounded split
 * per partition from offset 0 to the log end, driven as Flink's split fetcher drives it: {@code
 * fetch()} until every split finished, draining each {@link RecordsWithSplitIds} and recycling it.
 * The consumer checks each batch's CRC and copies every value into its own {@code byte[]}; the
 * benchmark hands each to a {@link Blackhole}.
 *
 * <p>Each trial starts its own Kafka ({@link KafkaBroker}, KRaft, one node) and loads it with
 * {@link KafkaPreload}. One invocation creates the reader (a new consumer), reads the whole topic
 * ({@value BenchmarkBase#RECORDS_PER_INVOCATION} records at full size) and closes it, so the score
 * is records per millisecond. {@code fetchBytes} is the byte budget of one Fetch RPC, as in the
 * pull benchmark: the consumer's {@code fetch.max.bytes} and {@code max.partition.fetch.bytes};
 * other consumer settings are the Kafka source's defaults ({@code max.poll.records} 500, so one
 * {@code fetch()} returns at most 500 records). Secondary results: fetch RPCs (the consumer's
 * {@code fetch-total}), records and bytes per iteration; when the trial ends it prints its RPCs per
 * million records and the CPU seconds Kafka's process used while serving the reads.
 */
@OperationsPerInvocation(BenchmarkBase.RECORDS_PER_INVOCATION)
public class KafkaSplitReaderBenchmark extends BenchmarkBase {

    static final String TOPIC = "bench";

    /** Partitions of the topic, one split each, all assigned to the one reader. */
    @Param({"4"})
    public int partitions;

    /** Byte budget of one Fetch RPC (over all partitions, and per partition). */
    @Param({"131072", "1048576", "4194304"})
    public int fetchBytes;

    /** The producer's batch size when the topic was loaded (Nearstream's chunk size). */
    @Param({"65536"})
    public int chunkBytes;

    private final StandaloneReaderContext context = new StandaloneReaderContext();
    private KafkaBroker kafka;
    private List<KafkaPartitionSplit> splits;
    private long records;
    private int invocation;
    private long invocations;
    private long trialRecords;
    private long trialRpcs;
    private long trialBytes;
    private double kafkaCpuAtStart;

    public static void main(String[] args) throws Exception {
        Options options =
                new OptionsBuilder()
                        .include(KafkaSplitReaderBenchmark.class.getSimpleName())
                        .build();
        new Runner(options).run();
    }

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        records = records();
        int recordBytes = Integer.getInteger(PreloadedStream.RECORD_BYTES_PROPERTY, 100);
        kafka = KafkaBroker.start();
        Map<TopicPartition, Long> ends =
                KafkaPreload.load(kafka, TOPIC, partitions, records, recordBytes, chunkBytes);
        splits = new ArrayList<>();
        ends.forEach((tp, end) -> splits.add(new KafkaPartitionSplit(tp, 0, end)));
        invocations = 0;
        trialRecords = 0;
        trialRpcs = 0;
        trialBytes = 0;
        kafkaCpuAtStart = kafka.cpuSeconds();
    }

    @Benchmark
    public void kafkaSplitReader(FetchCounters counters, Blackhole bh) throws Exception {
        // A client.id of its own, so the metrics read below are this reader's consumer's; the
        // trailing letter keeps invocation 1's prefix from matching invocation 10's client.id.
        String clientIdPrefix = "kafka-split-reader-bench-" + invocation++ + "-r";
        Properties props =
                KafkaSources.splitReaderProperties(kafka.bootstrapServers(), TOPIC, clientIdPrefix);
        props.setProperty(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, Integer.toString(fetchBytes));
        props.setProperty(
                ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, Integer.toString(fetchBytes));
        KafkaSourceReaderMetrics metrics =
                new KafkaSourceReaderMetrics(
                        UnregisteredMetricsGroup.createSourceReaderMetricGroup());
        KafkaPartitionSplitReader reader = new KafkaPartitionSplitReader(props, context, metrics);
        try {
            reader.handleSplitsChanges(new SplitsAddition<>(splits));
            long read = 0;
            int finished = 0;
            while (finished < splits.size()) {
                RecordsWithSplitIds<ConsumerRecord<byte[], byte[]>> batch = reader.fetch();
                while (batch.nextSplit() != null) {
                    ConsumerRecord<byte[], byte[]> record;
                    while ((record = batch.nextRecordFromSplit()) != null) {
                        bh.consume(record.value());
                        read++;
                    }
                }
                finished += batch.finishedSplits().size();
                batch.recycle();
            }
            if (read != records) {
                throw new IllegalStateException(
                        "read " + read + " records, the topic has " + records);
            }
            ConsumerFetchMetrics fetched = ConsumerFetchMetrics.ofClientIdPrefix(clientIdPrefix);
            counters.fetchRpcs += fetched.fetchRequests();
            counters.recordsRead += read;
            counters.bytesRead += fetched.bytes();
            invocations++;
            trialRecords += read;
            trialRpcs += fetched.fetchRequests();
            trialBytes += fetched.bytes();
        } finally {
            reader.close();
        }
    }

    @TearDown(Level.Trial)
    public void stopKafka(BenchmarkParams params) throws Exception {
        if (kafka == null) {
            return;
        }
        try {
            double kafkaCpu = kafka.cpuSeconds() - kafkaCpuAtStart;
            System.out.printf(
                    "%n# %s: %,d invocations, %,d records, %,d fetch RPCs: %.1f RPCs per million"
                            + " records, %,.0f bytes per RPC; Kafka used %.2f CPU s (%.3f per"
                            + " million records)%n",
                    label(params),
                    invocations,
                    trialRecords,
                    trialRpcs,
                    trialRecords == 0 ? 0.0 : trialRpcs * 1e6 / trialRecords,
                    trialRpcs == 0 ? 0.0 : (double) trialBytes / trialRpcs,
                    kafkaCpu,
                    trialRecords == 0 ? 0.0 : kafkaCpu * 1e6 / trialRecords);
        } finally {
            kafka.close();
            kafka = null;
        }
    }

    /** {@code method param=value ...}, as the Nearstream benchmarks label their summary lines. */
    private static String label(BenchmarkParams params) {
        String benchmark = params.getBenchmark();
        StringBuilder b = new StringBuilder(benchmark.substring(benchmark.lastIndexOf('.') + 1));
        for (String key : params.getParamsKeys()) {
            b.append(' ').append(key).append('=').append(params.getParam(key));
        }
        return b.toString();
    }
}
