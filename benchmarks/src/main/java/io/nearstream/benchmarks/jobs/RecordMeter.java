package io.nearstream.benchmarks.jobs;

import java.io.Serializable;
import java.util.concurrent.atomic.LongAdder;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.accumulators.LongMaximum;
import org.apache.flink.api.common.accumulators.LongMinimum;
import org.apache.flink.api.common.functions.RuntimeContext;

/**
 * Counts what one subtask of a workload operator sees, cheaply (plain fields per record; the clock
 * is read once at the first record and once at the end), and adds it to the job's accumulators when
 * the subtask ends.
 */
final class RecordMeter implements Serializable {

    static final String RECORDS_IN = "recordsIn";
    static final String RECORDS_OUT = "recordsOut";
    static final String VALUE_BYTES = "valueBytes";
    static final String FIRST_NANOS = "firstRecordNanos";
    static final String LAST_NANOS = "lastRecordNanos";

    private static final long serialVersionUID = 1L;

    /**
     * Records seen by every meter of this JVM, for a timed job's per-second samples ({@link
     * TimedJob}; the MiniCluster runs in this JVM). Added to in batches of {@value #LIVE_BATCH} so
     * the per-record cost stays a plain increment.
     */
    static final LongAdder LIVE = new LongAdder();

    private static final int LIVE_BATCH = 4096;

    private long in;
    private int unreported;
    private long out;
    private long bytes;
    private long firstNanos;

    /** One record in; {@code passed}: it also goes out (counted, or matched). */
    void record(byte[] value, boolean passed) {
        if (in == 0) {
            firstNanos = System.nanoTime();
        }
        in++;
        if (++unreported == LIVE_BATCH) {
            LIVE.add(unreported);
            unreported = 0;
        }
        bytes += value.length;
        if (passed) {
            out++;
        }
    }

    private transient LongCounter recordsIn;
    private transient LongCounter recordsOut;
    private transient LongCounter valueBytes;
    private transient LongMinimum first;
    private transient LongMaximum last;

    /** When the subtask opens: registers the job's accumulators. */
    void open(RuntimeContext context) {
        recordsIn = new LongCounter();
        recordsOut = new LongCounter();
        valueBytes = new LongCounter();
        first = new LongMinimum();
        last = new LongMaximum();
        context.addAccumulator(RECORDS_IN, recordsIn);
        context.addAccumulator(RECORDS_OUT, recordsOut);
        context.addAccumulator(VALUE_BYTES, valueBytes);
        context.addAccumulator(FIRST_NANOS, first);
        context.addAccumulator(LAST_NANOS, last);
    }

    /**
     * At the end of the subtask's input: adds its figures to the accumulators. A subtask cancelled
     * before it opened (a failover that cancels tasks still restoring) has none to add; Flink
     * closes its functions all the same, and an exception thrown there is fatal to the TaskManager.
     */
    void publish() {
        if (recordsIn == null) {
            return;
        }
        long lastNanos = System.nanoTime();
        LIVE.add(unreported);
        unreported = 0;
        recordsIn.add(in);
        recordsOut.add(out);
        valueBytes.add(bytes);
        if (in > 0) {
            first.add(firstNanos);
            last.add(lastNanos);
        }
    }
}
