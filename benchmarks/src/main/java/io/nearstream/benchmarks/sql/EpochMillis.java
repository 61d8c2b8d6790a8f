package io.nearstream.benchmarks.sql;

import java.time.Instant;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.functions.ScalarFunction;

/**
 * {@code EPOCH_MILLIS(TIMESTAMP_LTZ(3))}: the instant as milliseconds since the epoch. Flink SQL
 * has the other direction ({@code TO_TIMESTAMP_LTZ(ms, 3)}) but no cast from {@code TIMESTAMP_LTZ}
 * to a number ("The cast from TIMESTAMP_LTZ type to NUMERIC type is not allowed"), and the YSB
 * result rows carry their window end and emission time as epoch milliseconds.
 */
public final class EpochMillis extends ScalarFunction {

    private static final long serialVersionUID = 1L;

    /** The name {@link YsbSql} registers it under. */
    public static final String NAME = "EPOCH_MILLIS";

    public Long eval(@DataTypeHint("TIMESTAMP_LTZ(3)") Instant instant) {
        return instant == null ? null : instant.toEpochMilli();
    }
}
