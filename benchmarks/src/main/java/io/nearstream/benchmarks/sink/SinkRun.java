package io.nearstream.benchmarks.sink;

import java.util.Arrays;
import java.util.List;
import javax.annotation.Nullable;

/**
 * One run of one sink: the figures of its measurement window (after the warm-up), and for the
 * Nearstream exactly-once sink the latency of each transaction committed in the window.
 *
 * @param seconds the window's length
 * @param records records the sink was handed in the window (the probe's count)
 * @param jobCpuSeconds this JVM's CPU in the window (MiniCluster, job, benchmark threads)
 * @param brokerCpuSeconds CPU of the sink's broker process in the window (nearstreamd or the Kafka
 *     node's JVM, from /proc; 0 for the discarding sink)
 * @param idleBrokerCpuSeconds CPU of the other broker, which idles meanwhile (not in the totals)
 * @param recordsAtEnd records the sink was handed when the job was cancelled
 * @param brokerRecords records the broker took in over the whole run: Nearstream at least once, the
 *     delta of its {@code nearstream_append_records_total}; Nearstream exactly once, the records of
 *     the transactions whose TxnCommit the broker acknowledged; Kafka, the sum of the topic's end
 *     offsets, which under exactly once also counts the records of the transaction the cancel
 *     aborted and one commit marker per partition and transaction (so it is a weaker check); -1 for
 *     the discarding sink
 * @param recordsAtWindowEnd the probe's count at the end of the window; the broker must hold at
 *     least as many (a checkpoint completed after it before the job was cancelled)
 * @param checkpoints checkpoints completed in the window (the JobManager's statistics)
 * @param checkpointP50Ms median end-to-end duration of those checkpoints
 * @param visibility exactly-once transactions committed in the window (Nearstream EO only)
 */
record SinkRun(
        SinkKind kind,
        int repetition,
        double seconds,
        long records,
        double jobCpuSeconds,
        double brokerCpuSeconds,
        double idleBrokerCpuSeconds,
        long recordsAtWindowEnd,
        long recordsAtEnd,
        long brokerRecords,
        int checkpoints,
        double checkpointP50Ms,
        @Nullable Visibility visibility) {

    double recordsPerSecond() {
        return seconds > 0 ? records / seconds : 0;
    }

    double perMillion(double cpuSeconds) {
        return records == 0 ? Double.NaN : cpuSeconds / (records / 1e6);
    }

    double jobCpuPerMillion() {
        return perMillion(jobCpuSeconds);
    }

    double brokerCpuPerMillion() {
        return perMillion(brokerCpuSeconds);
    }

    double totalCpuPerMillion() {
        return perMillion(jobCpuSeconds + brokerCpuSeconds);
    }

    /**
     * Whether the broker took in at least every record handed to the sink up to the window's end.
     */
    boolean delivered() {
        return brokerRecords < 0 || brokerRecords >= recordsAtWindowEnd;
    }

    /**
     * The transactions whose commit began in the window: those timed, those the reader skipped (it
     * continues at the tail, so a transaction committed while an answer was on its way is not
     * observed), and those it saw before their commit began (a correctness bug; must be 0).
     */
    record Visibility(List<TxnLatency> timed, int unobserved, int visibleBeforeCommit) {

        List<Double> commitToVisibleMs() {
            return timed.stream().map(TxnLatency::commitToVisibleMs).toList();
        }

        List<Double> ackToVisibleMs() {
            return timed.stream().map(TxnLatency::ackToVisibleMs).toList();
        }

        List<Double> commitCallMs() {
            return timed.stream().map(TxnLatency::commitCallMs).toList();
        }

        List<Double> flushMs() {
            return timed.stream().map(TxnLatency::flushMs).toList();
        }

        List<Double> prepareMs() {
            return timed.stream().map(TxnLatency::prepareMs).toList();
        }

        /**
         * For a format: transactions timed, skipped, visible before commit, then p50 and p99 of
         * commit→visible, last ack→visible and the commit call.
         */
        Object[] figures() {
            return new Object[] {
                timed.size(),
                unobserved,
                visibleBeforeCommit,
                percentile(commitToVisibleMs(), 50),
                percentile(commitToVisibleMs(), 99),
                percentile(ackToVisibleMs(), 50),
                percentile(ackToVisibleMs(), 99),
                percentile(commitCallMs(), 50),
                percentile(commitCallMs(), 99)
            };
        }
    }

    /**
     * One transaction's latencies, in ms.
     *
     * @param checkpointId the checkpoint that prepared it
     * @param records records in it
     * @param commitToVisibleMs the committer's {@code commit} call began (the sink heard that the
     *     checkpoint completed) → its first record in the reader's streamlet became fetchable
     * @param ackToVisibleMs the JobManager received the checkpoint's last acknowledgement (the
     *     checkpoint completes right after) → fetchable; NaN when Flink's statistics lack it
     * @param commitCallMs the committer's {@code commit} call (TxnCommit round trip and all)
     * @param flushMs at the checkpoint's barrier, the writer's {@code flush}: the producer sends
     *     what it buffers and waits for every answer
     * @param prepareMs then the writer's {@code prepareCommit}: TxnPrepare (the task thread waits
     *     for both before the barrier goes on)
     */
    record TxnLatency(
            long checkpointId,
            long records,
            double commitToVisibleMs,
            double ackToVisibleMs,
            double commitCallMs,
            double flushMs,
            double prepareMs) {}

    /** The nearest-rank percentile {@code p} (0–100) of the values, NaN when there are none. */
    static double percentile(List<Double> values, double p) {
        double[] v =
                values.stream()
                        .mapToDouble(Double::doubleValue)
                        .filter(d -> !Double.isNaN(d))
                        .toArray();
        if (v.length == 0) {
            return Double.NaN;
        }
        Arrays.sort(v);
        int rank = (int) Math.ceil(p / 100.0 * v.length);
        return v[Math.max(0, Math.min(v.length - 1, rank - 1))];
    }
}
