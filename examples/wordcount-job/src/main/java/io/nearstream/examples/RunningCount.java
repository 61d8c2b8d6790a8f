package io.nearstream.examples;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Counts each word (the key) and emits {@code word<TAB>count} for every occurrence. The count is
 * keyed state, so it is part of each checkpoint and comes back with it after a failure.
 */
public final class RunningCount extends KeyedProcessFunction<String, String, String> {

    private static final long serialVersionUID = 1L;

    private transient ValueState<Long> count;

    @Override
    public void open(OpenContext openContext) {
        count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Long.class));
    }

    @Override
    public void processElement(String word, Context ctx, Collector<String> out) throws Exception {
        Long previous = count.value();
        long next = previous == null ? 1 : previous + 1;
        count.update(next);
        out.collect(word + '\t' + next);
    }
}
