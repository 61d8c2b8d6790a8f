package io.nearstream.benchmarks.jobs;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichFlatMapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

/**
 * Iterate and count (Listing 1 of the pull-vs-push co-location paper, Marcu and Bouvry, "Colocating
 * Real-time Storage and Processing"): a flat-map after the source visits every record and counts it
 * (and its bytes), emitting nothing; a discarding sink ends the job. The result is the count, which
 * must equal the records in the stream.
 */
public final class CountWorkload implements Workload {

    public static final String NAME = "count";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public void addTo(DataStream<byte[]> records, JobOptions options) {
        records.flatMap(new CountRecords())
                .returns(Types.LONG)
                .name("iterate-and-count")
                .sinkTo(new DiscardingSink<>())
                .name("discard");
    }

    /** Counts every record (that paper's RTLogger, minus its per-second log line). */
    static final class CountRecords extends RichFlatMapFunction<byte[], Long> {
        private static final long serialVersionUID = 1L;
        private final RecordMeter meter = new RecordMeter();

        @Override
        public void open(OpenContext context) {
            meter.open(getRuntimeContext());
        }

        @Override
        public void flatMap(byte[] value, Collector<Long> out) {
            meter.record(value, true);
        }

        @Override
        public void close() {
            meter.publish();
        }
    }
}
