package io.nearstream.benchmarks.jobs;

import java.nio.charset.StandardCharsets;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichFilterFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

/**
 * Iterate, count and filter (Listing 1 of the pull-vs-push co-location paper, Marcu and Bouvry, its
 * "RichFilterThroughputLogger"): a filter after the source reads each record's bytes as a string
 * and keeps the records that contain {@link JobOptions#filterPattern()}; it counts records in and
 * records kept, and a discarding sink ends the job. The result is the number kept, which is the
 * same in every mode.
 */
public final class FilterWorkload implements Workload {

    public static final String NAME = "filter";

    /**
     * The default pattern: two bytes that the synthetic records' 8-byte index (little-endian) holds
     * for some records only, so the filter keeps a small, data-dependent share.
     */
    public static final String DEFAULT_PATTERN = "\u0001\u0002";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public void addTo(DataStream<byte[]> records, JobOptions options) {
        records.filter(new MatchRecords(options.filterPattern()))
                .name("filter")
                .sinkTo(new DiscardingSink<>())
                .name("discard");
    }

    /** Keeps the records whose ISO-8859-1 string contains the pattern (one String per record). */
    static final class MatchRecords extends RichFilterFunction<byte[]> {
        private static final long serialVersionUID = 1L;
        private final String pattern;
        private final RecordMeter meter = new RecordMeter();

        MatchRecords(String pattern) {
            this.pattern = pattern;
        }

        @Override
        public void open(OpenContext context) {
            meter.open(getRuntimeContext());
        }

        @Override
        public boolean filter(byte[] value) {
            boolean match = new String(value, StandardCharsets.ISO_8859_1).contains(pattern);
            meter.record(value, match);
            return match;
        }

        @Override
        public void close() {
            meter.publish();
        }
    }
}
