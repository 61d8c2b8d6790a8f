package io.nearstream.benchmarks.jobs;

import io.nearstream.benchmarks.workloads.ResultRecords;
import io.nearstream.benchmarks.workloads.WordCountFileSink;
import io.nearstream.benchmarks.workloads.WordCountPipeline;
import io.nearstream.benchmarks.workloads.WordWindowCount;
import java.nio.file.Path;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.streaming.api.datastream.DataStream;

/**
 * Windowed word count ({@link WordCountPipeline#windowedWordCounts}: {@value
 * WordCountPipeline#WINDOW_SECONDS} s event-time windows sliding every {@value
 * WordCountPipeline#SLIDE_SECONDS} s): records in are text records, records out are the (word,
 * window) results. The files in {@code --output-dir} hold, per word, the sum of its window counts
 * ({@link WordCountFileSink#sumPerWord}), which on bounded input is {@value
 * WordCountPipeline#WINDOW_SECONDS} times its total: every occurrence lies in that many windows.
 * With {@code --output-stream NAME} every (word, window) result also (or only) goes to that stream
 * as a {@code word<TAB>count<TAB>window_end} record ({@link StreamOutput}, {@link ResultRecords}).
 */
public final class WindowedWordCountWorkload implements Workload {

    public static final String NAME = "windowed-wordcount";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public WatermarkStrategy<byte[]> watermarks() {
        return WordCountPipeline.sourceWatermarks();
    }

    @Override
    public void addTo(DataStream<byte[]> records, JobOptions options) {
        Path out = WordCountWorkload.outputDir(options, NAME);
        DataStream<WordWindowCount> counts =
                WordCountPipeline.windowedWordCounts(records.map(new MeterIn()).name("meter in"))
                        .map(new MeterOut<WordWindowCount>())
                        .name("meter out");
        if (out != null) {
            counts.map(w -> Tuple2.of(w.word, w.count))
                    .returns(Types.TUPLE(Types.STRING, Types.LONG))
                    .name("(word, window count)")
                    .sinkTo(WordCountFileSink.sumPerWord(out))
                    .name("window counts summed per word to " + out);
        }
        if (StreamOutput.requested(options)) {
            counts.sinkTo(
                            StreamOutput.<WordWindowCount>sink(
                                    options, ResultRecords::wordWindowCount, w -> w.word))
                    .name("window counts " + StreamOutput.describe(options));
        }
    }
}
