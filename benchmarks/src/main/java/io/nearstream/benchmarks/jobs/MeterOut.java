package io.nearstream.benchmarks.jobs;

import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;

/**
 * Counts the results a workload's pipeline emits (its {@link WorkloadResult#recordsOut()}) on the
 * way to the sink, passing each one on unchanged. It must not be chained to a {@link MeterIn}: both
 * register the job's records-out accumulator, which a task may hold once; the pipelines it follows
 * end in a keyed operator, which starts a new task.
 */
final class MeterOut<T> extends RichMapFunction<T, T> {
    private static final long serialVersionUID = 1L;
    private transient LongCounter out;

    @Override
    public void open(OpenContext context) {
        out = new LongCounter();
        getRuntimeContext().addAccumulator(RecordMeter.RECORDS_OUT, out);
    }

    @Override
    public T map(T value) {
        out.add(1);
        return value;
    }
}
