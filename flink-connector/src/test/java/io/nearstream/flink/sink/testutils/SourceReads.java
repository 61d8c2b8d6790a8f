package io.nearstream.flink.sink.testutils;

import io.nearstream.flink.source.NearstreamSource;
import io.nearstream.flink.source.NearstreamStoppingPositions;
import io.nearstream.flink.source.ReadMode;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;

/**
 * Reads what a sink wrote with the connector's own source: a bounded job (from the earliest
 * position to the tail each streamlet has when the job starts) in {@link ReadMode#PULL} or {@link
 * ReadMode#PUSH}, collecting every record as a UTF-8 string. Runs on the test's Flink cluster.
 */
public final class SourceReads {

    private SourceReads() {}

    /** Every record of the stream up to its current tail, read by a job of {@code parallelism}. */
    public static List<String> readAll(String broker, String stream, ReadMode mode, int parallelism)
            throws Exception {
        NearstreamSource<String> source =
                NearstreamSource.<String>builder()
                        .setBrokers(broker)
                        .setStream(stream)
                        .setReadMode(mode)
                        .setPushSlots(4, 64 * 1024)
                        .setFetchMaxWaitMs(100)
                        .setDeserializer(NearstreamRecordDeserializationSchema.utf8())
                        .setBounded(NearstreamStoppingPositions.latest())
                        .build();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(parallelism);
        List<String> out = new ArrayList<>();
        try (CloseableIterator<String> it =
                env.fromSource(source, WatermarkStrategy.noWatermarks(), "read-" + mode)
                        .executeAndCollect("read " + stream + " in " + mode + " mode")) {
            it.forEachRemaining(out::add);
        }
        return out;
    }
}
