package io.nearstream.flink.sink.testutils;

import io.nearstream.flink.sink.NearstreamRecordSerializationSchema;
import io.nearstream.flink.sink.NearstreamSink;
import io.nearstream.flink.sink.NearstreamSinkBuilder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import javax.annotation.Nullable;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.util.RestartStrategyUtils;

/** The sink the tests write with, and what they check the stream's contents with. */
public final class SinkJobs {

    private SinkJobs() {}

    /** A sink of strings; the key is the record itself, so records spread over the streamlets. */
    public static NearstreamSink<String> sink(
            String broker, String stream, DeliveryGuarantee guarantee, @Nullable String prefix) {
        NearstreamSinkBuilder<String> builder =
                NearstreamSink.<String>builder()
                        .setBrokers(broker)
                        .setStream(stream)
                        .setRecordSerializer(keyedStrings())
                        .setDeliveryGuarantee(guarantee);
        if (prefix != null) {
            builder.setTransactionalIdPrefix(prefix);
        }
        return builder.build();
    }

    /** Strings keyed by themselves, so records spread over the streamlets. */
    public static NearstreamRecordSerializationSchema<String> keyedStrings() {
        return NearstreamRecordSerializationSchema.<String>builder()
                .setValueSerializationSchema(new SimpleStringSchema())
                .setKeySerializationSchema(new SimpleStringSchema())
                .build();
    }

    /**
     * A job writing the numbers {@code 0 .. records-1} through {@link FailOnceMap} (which fails
     * once after {@code failAfter} records and a checkpoint) with 2 writers, checkpoints every 300
     * ms and one restart.
     */
    public static StreamExecutionEnvironment numbersJob(
            NearstreamSink<String> sink, long records, int failAfter, CheckpointingMode mode) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        env.enableCheckpointing(300, mode);
        RestartStrategyUtils.configureFixedDelayRestartStrategy(env, 1, 100L);
        FailOnceMap.reset(failAfter);
        env.fromSequence(0, records - 1).map(new FailOnceMap()).sinkTo(sink);
        return env;
    }

    /** A job of one record of 10 000 bytes, without restarts: for streams of 4 KiB segments. */
    public static StreamExecutionEnvironment oversizedRecordJob(
            NearstreamSink<String> sink, CheckpointingMode mode) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        env.enableCheckpointing(300, mode);
        RestartStrategyUtils.configureNoRestartStrategy(env);
        env.fromSequence(0, 0).map(i -> "x".repeat(10_000)).sinkTo(sink);
        return env;
    }

    /** How often each of the numbers {@code 0 .. n-1} was read, and anything else read. */
    public static Map<String, Integer> counts(List<String> read) {
        Map<String, Integer> counts = new TreeMap<>();
        for (String v : read) {
            counts.merge(v, 1, Integer::sum);
        }
        return counts;
    }

    /** The numbers {@code 0 .. n-1} that were never read. */
    public static List<Long> missing(Map<String, Integer> counts, long n) {
        List<Long> missing = new ArrayList<>();
        for (long i = 0; i < n; i++) {
            if (!counts.containsKey(Long.toString(i))) {
                missing.add(i);
            }
        }
        return missing;
    }

    /** The records read more than once, as {@code "value xN"}. */
    public static List<String> duplicated(Map<String, Integer> counts) {
        return counts.entrySet().stream()
                .filter(e -> e.getValue() > 1)
                .map(e -> e.getKey() + " x" + e.getValue())
                .toList();
    }
}
