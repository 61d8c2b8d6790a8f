package io.nearstream.benchmarks.workloads;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;

/**
 * Writes YSB window results as CSV, one file per subtask ({@code ysb-windows-<subtask>.csv}, see
 * {@link YsbSummary#CSV_HEADER}), each line flushed as it comes (100 campaigns per 10 s window is
 * little), so a cancelled unbounded job leaves every result emitted so far. {@link YsbSummary#read}
 * reads them back.
 */
public final class YsbWindowSink implements Sink<CampaignWindowCount> {

    private static final long serialVersionUID = 1L;

    private final String directory;

    public YsbWindowSink(Path directory) {
        this.directory = directory.toAbsolutePath().toString();
    }

    @Override
    public SinkWriter<CampaignWindowCount> createWriter(WriterInitContext context)
            throws IOException {
        Path dir = Path.of(directory);
        Files.createDirectories(dir);
        Path file = YsbSummary.partFile(dir, context.getTaskInfo().getIndexOfThisSubtask());
        return new Writer(Files.newBufferedWriter(file, StandardCharsets.UTF_8));
    }

    private static final class Writer implements SinkWriter<CampaignWindowCount> {
        private final BufferedWriter out;

        Writer(BufferedWriter out) throws IOException {
            this.out = out;
            out.write(YsbSummary.CSV_HEADER);
            out.write('\n');
            out.flush();
        }

        @Override
        public void write(CampaignWindowCount r, Context context) throws IOException {
            out.write(r.toCsv());
            out.write('\n');
            out.flush();
        }

        @Override
        public void flush(boolean endOfInput) throws IOException {
            out.flush();
        }

        @Override
        public void close() throws IOException {
            out.close();
        }
    }
}
