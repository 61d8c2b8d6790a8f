package io.nearstream.examples;

import io.nearstream.flink.sink.NearstreamRecordSerializationSchema;
import io.nearstream.flink.sink.NearstreamSink;
import io.nearstream.flink.source.NearstreamSource;
import io.nearstream.flink.source.NearstreamStartingPositions;
import io.nearstream.flink.source.ReadMode;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.ParameterTool;

/**
 * A streaming word count from one Nearstream stream to another, exactly once.
 *
 * <p>Reads text records from {@code --input} (unbounded, from the earliest position), splits them
 * into lower-case words ({@link WordTokenizer}), keeps a running count per word in keyed state
 * ({@link RunningCount}) and writes one {@code word<TAB>count} record per update to {@code
 * --output} through broker transactions committed with each checkpoint. So for a word that occurs n
 * times in the input, the committed output holds the counts 1..n once each, also after a failure
 * and restore.
 *
 * <pre>
 * --broker HOST:PORT            the broker (required)
 * --input STREAM                the text stream (required)
 * --output STREAM               the counts stream; must exist (required)
 * --mode pull|push|auto         how the source reads (default pull)
 * --checkpoint-interval-ms N    also the latency of the output (default 1000)
 * --txn-prefix P                the sink's transactional id prefix, one per job (default
 *                               wordcount)
 * --parallelism N               (default 2)
 * </pre>
 */
public final class WordCountJob {

    private WordCountJob() {}

    public static void main(String[] args) throws Exception {
        ParameterTool params = ParameterTool.fromArgs(args);
        String broker = params.getRequired("broker");
        String input = params.getRequired("input");
        String output = params.getRequired("output");
        ReadMode mode = ReadMode.valueOf(params.get("mode", "pull").toUpperCase(Locale.ROOT));
        long checkpointIntervalMs = params.getLong("checkpoint-interval-ms", 1_000);
        String txnPrefix = params.get("txn-prefix", "wordcount");
        int parallelism = params.getInt("parallelism", 2);

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(parallelism);
        // The sink commits its transactions when a checkpoint completes: no checkpoints, no output.
        env.enableCheckpointing(checkpointIntervalMs, CheckpointingMode.EXACTLY_ONCE);

        NearstreamSource<String> source =
                NearstreamSource.<String>builder()
                        .setBrokers(broker)
                        .setStream(input)
                        .setReadMode(mode)
                        .setStartingPositions(NearstreamStartingPositions.earliest())
                        .setDeserializer(NearstreamRecordDeserializationSchema.utf8())
                        .build();

        NearstreamSink<String> sink =
                NearstreamSink.<String>builder()
                        .setBrokers(broker)
                        .setStream(output)
                        .setRecordSerializer(
                                NearstreamRecordSerializationSchema.<String>builder()
                                        .setValueSerializationSchema(new SimpleStringSchema())
                                        // All counts of a word in one streamlet, in order.
                                        .setKeySerializationSchema(WordCountJob::wordOf)
                                        .build())
                        .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                        .setTransactionalIdPrefix(txnPrefix)
                        .build();

        env.fromSource(source, WatermarkStrategy.noWatermarks(), "nearstream: " + input)
                .uid("nearstream-source")
                .flatMap(new WordTokenizer())
                .uid("tokenizer")
                .keyBy(word -> word)
                .process(new RunningCount())
                .uid("running-count")
                .sinkTo(sink)
                .uid("nearstream-sink");

        env.execute("Nearstream word count (" + mode.name().toLowerCase(Locale.ROOT) + ")");
    }

    /** The word of a {@code word<TAB>count} record, as the sink's key. */
    static byte[] wordOf(String record) {
        return record.substring(0, record.indexOf('\t')).getBytes(StandardCharsets.UTF_8);
    }
}
