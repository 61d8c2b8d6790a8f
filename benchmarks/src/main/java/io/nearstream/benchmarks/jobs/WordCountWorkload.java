package io.nearstream.benchmarks.jobs;

import io.nearstream.benchmarks.workloads.ResultRecords;
import io.nearstream.benchmarks.workloads.WordCountFileSink;
import io.nearstream.benchmarks.workloads.WordCountPipeline;
import java.nio.file.Path;
import javax.annotation.Nullable;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.streaming.api.datastream.DataStream;

/**
 * Streaming word count over text records ({@link WordCountPipeline#wordCounts}, Listing 2 of the
 * pull-vs-push co-location paper, Marcu and Bouvry): records in are text records, records out are
 * the running counts, one per word occurrence (so the output is the number of words). Each word's
 * total goes to {@code word-counts-<subtask>.tsv} files in {@code --output-dir} ({@link
 * WordCountFileSink#maxPerWord}), to compare with {@code scripts/wordcount_reference.py}; with
 * {@code --output-stream NAME} every running count also (or only) goes to that stream as a {@code
 * word<TAB>count} record ({@link StreamOutput}, {@link ResultRecords}).
 */
public final class WordCountWorkload implements Workload {

    public static final String NAME = "wordcount";

    /** The flag naming the directory the word-count workloads write their counts to. */
    static final String OUTPUT_DIR = "output-dir";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public void addTo(DataStream<byte[]> records, JobOptions options) {
        Path out = outputDir(options, NAME);
        DataStream<Tuple2<String, Long>> counts =
                WordCountPipeline.wordCounts(records.map(new MeterIn()).name("meter in"))
                        .map(new MeterOut<Tuple2<String, Long>>())
                        .name("meter out");
        if (out != null) {
            counts.sinkTo(WordCountFileSink.maxPerWord(out)).name("word totals to " + out);
        }
        if (StreamOutput.requested(options)) {
            counts.sinkTo(
                            StreamOutput.<Tuple2<String, Long>>sink(
                                    options, c -> ResultRecords.wordCount(c.f0, c.f1), c -> c.f0))
                    .name("word counts " + StreamOutput.describe(options));
        }
    }

    /**
     * The {@code --output-dir} of a workload that writes its results, or null when they go to an
     * {@code --output-stream} only.
     *
     * @throws IllegalArgumentException when neither is given
     */
    @Nullable
    static Path outputDir(JobOptions options, String workload) {
        String dir = options.param(OUTPUT_DIR, "");
        if (!dir.isEmpty()) {
            return Path.of(dir).toAbsolutePath();
        }
        if (StreamOutput.requested(options)) {
            return null;
        }
        throw new IllegalArgumentException(
                "workload "
                        + workload
                        + " writes its results: give --"
                        + OUTPUT_DIR
                        + " DIR or --"
                        + StreamOutput.STREAM
                        + " NAME");
    }
}
