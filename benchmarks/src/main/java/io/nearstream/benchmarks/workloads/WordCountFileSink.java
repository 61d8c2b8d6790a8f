package io.nearstream.benchmarks.workloads;

import java.io.IOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.api.java.tuple.Tuple2;

/**
 * Keeps one number per word and writes them when the input ends: each subtask writes {@code
 * word-counts-<subtask>.tsv} ("word TAB count" lines, sorted) into a directory; {@link
 * WordCountFiles#read} merges the files of all subtasks the same way.
 *
 * <ul>
 *   <li>{@link #maxPerWord}: for {@link WordCountPipeline#wordCounts}' running counts; a word's
 *       largest running count is its total, whatever order the updates arrive in, and wherever the
 *       sink subtasks are;
 *   <li>{@link #sumPerWord}: adds the values, e.g. a word's window counts.
 * </ul>
 *
 * <p>The files are written at end of input (bounded jobs) or, failing that, when the writer closes
 * (a cancelled unbounded job: then they hold what was seen so far). Not checkpointed: a restarted
 * job starts from empty maps and rewrites the files.
 */
public final class WordCountFileSink implements Sink<Tuple2<String, Long>> {

    private static final long serialVersionUID = 1L;

    private final String directory;
    private final WordCountFiles.Merge merge;

    private WordCountFileSink(Path directory, WordCountFiles.Merge merge) {
        this.directory = directory.toAbsolutePath().toString();
        this.merge = merge;
    }

    /** Keeps the largest value per word (the total of running counts). */
    public static WordCountFileSink maxPerWord(Path directory) {
        return new WordCountFileSink(directory, WordCountFiles.Merge.MAX);
    }

    /** Keeps the sum of the values per word. */
    public static WordCountFileSink sumPerWord(Path directory) {
        return new WordCountFileSink(directory, WordCountFiles.Merge.SUM);
    }

    @Override
    public SinkWriter<Tuple2<String, Long>> createWriter(WriterInitContext context) {
        return new Writer(
                WordCountFiles.partFile(
                        Path.of(directory), context.getTaskInfo().getIndexOfThisSubtask()),
                merge);
    }

    private static final class Writer implements SinkWriter<Tuple2<String, Long>> {
        private final Path file;
        private final WordCountFiles.Merge merge;
        private final Map<String, Long> counts = new HashMap<>();
        private boolean written;

        Writer(Path file, WordCountFiles.Merge merge) {
            this.file = file;
            this.merge = merge;
        }

        @Override
        public void write(Tuple2<String, Long> element, Context context) {
            merge.into(counts, element.f0, element.f1);
        }

        @Override
        public void flush(boolean endOfInput) throws IOException {
            if (endOfInput) {
                WordCountFiles.write(file, counts);
                written = true;
            }
        }

        @Override
        public void close() throws IOException {
            if (!written) {
                WordCountFiles.write(file, counts);
            }
        }
    }
}
