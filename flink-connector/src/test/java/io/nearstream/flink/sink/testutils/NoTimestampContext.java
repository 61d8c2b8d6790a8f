package io.nearstream.flink.sink.testutils;

import org.apache.flink.api.connector.sink2.SinkWriter;

/** The context of an element written without a Flink timestamp, before any watermark. */
public final class NoTimestampContext implements SinkWriter.Context {

    public static final NoTimestampContext INSTANCE = new NoTimestampContext();

    private NoTimestampContext() {}

    @Override
    public long currentWatermark() {
        return Long.MIN_VALUE;
    }

    @Override
    public Long timestamp() {
        return null;
    }
}
