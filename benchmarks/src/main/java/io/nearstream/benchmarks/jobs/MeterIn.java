package io.nearstream.benchmarks.jobs;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;

/**
 * Counts the records a workload reads (records in, their bytes, first/last record time) and passes
 * each one on unchanged, so that a workload built from a source-agnostic pipeline is measured like
 * {@link CountWorkload}: chained to the source, it costs a field increment per record.
 */
final class MeterIn extends RichMapFunction<byte[], byte[]> {
    private static final long serialVersionUID = 1L;
    private final RecordMeter meter = new RecordMeter();

    @Override
    public void open(OpenContext context) {
        meter.open(getRuntimeContext());
    }

    @Override
    public byte[] map(byte[] value) {
        // "Out" is counted where the pipeline ends ({@link MeterOut}), not here.
        meter.record(value, false);
        return value;
    }

    @Override
    public void close() {
        meter.publish();
    }
}
