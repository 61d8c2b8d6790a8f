package io.nearstream.benchmarks.sink;

import io.nearstream.benchmarks.kafka.IndexedRecords;
import io.nearstream.flink.sink.NearstreamRecordSerializationSchema;
import io.nearstream.flink.sink.NearstreamSink;
import java.util.Properties;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.api.graph.StreamGraph;

/**
 * The benchmark job: {@link DataGeneratorSource} (no rate limit; record {@code i} is {@code
 * recordBytes} bytes carrying {@code i}, {@link IndexedRecords}) → {@link ProbeFunction} (counts) →
 * the sink under test, all chained, with checkpoints every {@code checkpointMs} and no restarts (a
 * failure fails the run). The generator's count is unbounded in practice: the benchmark cancels the
 * job after its measurement.
 */
final class SinkJobs {

    /** Where a job writes: the broker address or Kafka bootstrap servers, and the stream/topic. */
    record Target(String address, String stream, String transactionalIdPrefix) {}

    private SinkJobs() {}

    static JobGraph jobGraph(
            SinkKind kind, SinkBenchmarkOptions options, Target target, String runId) {
        Configuration config = new Configuration();
        config.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        // Only builds the graph (it is submitted to the benchmark's MiniCluster).
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(options.parallelism());
        env.getConfig().enableObjectReuse();
        env.enableCheckpointing(options.checkpointMs(), CheckpointingMode.EXACTLY_ONCE);

        DataGeneratorSource<byte[]> source =
                new DataGeneratorSource<>(
                        new Records(options.recordBytes()),
                        Long.MAX_VALUE,
                        RateLimiterStrategy.noOp(),
                        PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);
        DataStream<byte[]> records =
                env.fromSource(source, WatermarkStrategy.noWatermarks(), "generator")
                        .map(new ProbeFunction(runId))
                        .name("probe");
        switch (kind) {
            case NEARSTREAM_ALO -> records.sinkTo(nearstream(kind, options, target)).name("sink");
            case NEARSTREAM_EO ->
                    records.sinkTo(
                                    new TracingNearstreamSink(
                                            nearstream(kind, options, target), runId))
                            .name("sink");
            case KAFKA_ALO, KAFKA_EO -> records.sinkTo(kafka(kind, options, target)).name("sink");
            case DISCARD -> records.sinkTo(new DiscardingSink<>()).name("sink");
        }
        StreamGraph graph = env.getStreamGraph();
        graph.setJobName("sink-bench-" + kind.label() + "-p" + options.parallelism());
        return graph.getJobGraph();
    }

    static NearstreamSink<byte[]> nearstream(
            SinkKind kind, SinkBenchmarkOptions options, Target target) {
        var builder =
                NearstreamSink.<byte[]>builder()
                        .setBrokers(target.address())
                        .setStream(target.stream())
                        .setRecordSerializer(
                                NearstreamRecordSerializationSchema.<byte[]>builder()
                                        .setValueSerializationSchema(new Bytes())
                                        .build())
                        .setDeliveryGuarantee(kind.guarantee())
                        .setBatchSizeBytes(options.batchBytes())
                        .setLingerMs(options.lingerMs());
        if (kind == SinkKind.NEARSTREAM_EO) {
            builder.setTransactionalIdPrefix(target.transactionalIdPrefix());
        }
        return builder.build();
    }

    /**
     * Flink's KafkaSink with the producer settings of the Nearstream sink where Kafka has them:
     * {@code batch.size} = the chunk size, the same {@code linger.ms}, {@code acks=all}, no
     * compression; the rest Kafka's defaults (idempotence on, 5 requests in flight, 32 MiB buffer).
     * Records have no key: Kafka's default partitioner spreads them (sticky batches).
     */
    static KafkaSink<byte[]> kafka(SinkKind kind, SinkBenchmarkOptions options, Target target) {
        Properties producer = kafkaProducerProperties(kind, options);
        var builder =
                KafkaSink.<byte[]>builder()
                        .setKafkaProducerConfig(producer)
                        .setBootstrapServers(target.address())
                        .setRecordSerializer(
                                KafkaRecordSerializationSchema.<byte[]>builder()
                                        .setTopic(target.stream())
                                        .setValueSerializationSchema(new Bytes())
                                        .build())
                        .setDeliveryGuarantee(kind.guarantee());
        if (kind == SinkKind.KAFKA_EO) {
            builder.setTransactionalIdPrefix(target.transactionalIdPrefix());
        }
        return builder.build();
    }

    static Properties kafkaProducerProperties(SinkKind kind, SinkBenchmarkOptions options) {
        Properties p = new Properties();
        p.setProperty("batch.size", Integer.toString(options.batchBytes()));
        p.setProperty("linger.ms", Long.toString(options.lingerMs()));
        p.setProperty("acks", "all");
        p.setProperty("compression.type", "none");
        if (kind == SinkKind.KAFKA_EO) {
            // Flink's default (1 hour) is above the broker's transaction.max.timeout.ms (15 min).
            p.setProperty(
                    "transaction.timeout.ms", Long.toString(options.kafkaTransactionTimeoutMs()));
        }
        return p;
    }

    /** Record {@code i}: a new array of the template with {@code i} in its first 8 bytes. */
    static final class Records implements GeneratorFunction<Long, byte[]> {
        private static final long serialVersionUID = 1L;

        private final int recordBytes;
        private transient byte[] template;

        Records(int recordBytes) {
            this.recordBytes = recordBytes;
        }

        @Override
        public byte[] map(Long index) {
            if (template == null) {
                template = IndexedRecords.template(recordBytes);
            }
            byte[] record = template.clone();
            IndexedRecords.stamp(record, index);
            return record;
        }
    }

    /** The element is the record's bytes. */
    static final class Bytes implements SerializationSchema<byte[]> {
        private static final long serialVersionUID = 1L;

        @Override
        public byte[] serialize(byte[] element) {
            return element;
        }
    }
}
