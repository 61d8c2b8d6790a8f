package io.nearstream.benchmarks;

import io.nearstream.process.BrokerProcess;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * Base of the benchmarks that read a stream pre-loaded into a local broker: starts it for the
 * trial, checks that every invocation read all of it, and prints the trial's fetch-RPC totals next
 * to the broker's own count.
 */
public abstract class PreloadedStreamBenchmark extends BenchmarkBase {

    protected PreloadedStream stream;
    private final TrialTotals totals = new TrialTotals();
    private long brokerCpuNsAtStart;

    /** Starts the broker and loads {@link #records()} records; call from the trial's setup. */
    protected void startStream(int streamlets, int chunkBytes) throws Exception {
        startStream(streamlets, chunkBytes, new String[0]);
    }

    /** As {@link #startStream(int, int)}, the broker started with {@code brokerArgs}. */
    protected void startStream(int streamlets, int chunkBytes, String... brokerArgs)
            throws Exception {
        stream =
                PreloadedStream.start(
                        BrokerProcess.start(brokerArgs),
                        streamlets,
                        records(),
                        Integer.getInteger(PreloadedStream.RECORD_BYTES_PROPERTY, 100),
                        chunkBytes);
        int records = records();
        if (records != BenchmarkBase.RECORDS_PER_INVOCATION) {
            System.out.printf(
                    "# NOTE: %s=%d: the primary score counts %,d records per invocation, so it"
                            + " is off by a factor of %.2f; the true rate is the recordsRead"
                            + " secondary result divided by the iteration time%n",
                    BenchmarkBase.RECORDS_PROPERTY,
                    records,
                    BenchmarkBase.RECORDS_PER_INVOCATION,
                    (double) BenchmarkBase.RECORDS_PER_INVOCATION / records);
        }
        totals.start(stream.brokerStat(brokerCounter()));
        brokerCpuNsAtStart = stream.brokerStat(BROKER_CPU);
    }

    /** The broker's own CPU time (all its threads), read for the trial's summary line. */
    private static final String BROKER_CPU = "nearstream_process_cpu_ns_total";

    /**
     * The broker counter that must match the reader's own count of its requests ({@code rpcs} of
     * {@link #invocationDone}): fetch RPCs for the pull path.
     */
    protected String brokerCounter() {
        return "nearstream_fetch_requests_total";
    }

    /** What {@link #brokerCounter()} counts, for the trial's summary line. */
    protected String requestsName() {
        return "fetch RPCs";
    }

    /** Records one invocation; fails it when it did not read the whole stream. */
    protected void invocationDone(FetchCounters counters, long rpcs, long records, long bytes) {
        if (records != stream.records()) {
            throw new IllegalStateException(
                    "read " + records + " records, the stream has " + stream.records());
        }
        counters.add(rpcs, records, bytes);
        totals.add(rpcs, records, bytes);
    }

    @TearDown(Level.Trial)
    public void stopStream(BenchmarkParams params) throws Exception {
        if (stream == null) {
            return;
        }
        try {
            System.out.print(
                    totals.summary(
                            TrialTotals.label(params),
                            requestsName(),
                            stream.brokerStat(brokerCounter())));
            // Warm-up included, as the totals: the broker's side of serving the reads.
            System.out.print(
                    totals.brokerCpuLine(
                            TrialTotals.label(params),
                            stream.brokerStat(BROKER_CPU) - brokerCpuNsAtStart));
        } finally {
            stream.close();
            stream = null;
        }
    }
}
