package io.nearstream.benchmarks;

import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * Totals over a whole trial (warm-up included) for the summary line printed at its end: requests
 * (fetch RPCs, or push slots) per million records as counted by the client and by the broker, which
 * must agree.
 */
final class TrialTotals {

    /** {@code method param=value ...} of a trial, for its summary line. */
    static String label(BenchmarkParams params) {
        String benchmark = params.getBenchmark();
        StringBuilder b = new StringBuilder(benchmark.substring(benchmark.lastIndexOf('.') + 1));
        for (String key : params.getParamsKeys()) {
            b.append(' ').append(key).append('=').append(params.getParam(key));
        }
        return b.toString();
    }

    private long invocations;
    private long clientRpcs;
    private long records;
    private long bytes;
    private long brokerFetchesAtStart;

    void start(long brokerFetches) {
        brokerFetchesAtStart = brokerFetches;
        invocations = 0;
        clientRpcs = 0;
        records = 0;
        bytes = 0;
    }

    void add(long rpcs, long recordCount, long byteCount) {
        invocations++;
        clientRpcs += rpcs;
        records += recordCount;
        bytes += byteCount;
    }

    String summary(String what, String requests, long brokerFetchesNow) {
        long brokerRpcs = brokerFetchesNow - brokerFetchesAtStart;
        return String.format(
                "%n# %s: %,d invocations, %,d records, %,d %s (broker counted %,d):"
                        + " %.1f per million records (broker: %.1f), %,.0f bytes each%n",
                what,
                invocations,
                records,
                clientRpcs,
                requests,
                brokerRpcs,
                perMillion(clientRpcs),
                perMillion(brokerRpcs),
                clientRpcs == 0 ? 0.0 : (double) bytes / clientRpcs);
    }

    /** The broker's CPU seconds per million records read over the trial. */
    String brokerCpuLine(String what, long brokerCpuNs) {
        return String.format(
                "# %s: broker CPU %.3f s per million records read (%.2f s in all)%n",
                what, records == 0 ? 0.0 : brokerCpuNs / 1e9 * 1e6 / records, brokerCpuNs / 1e9);
    }

    private double perMillion(long rpcs) {
        return records == 0 ? 0.0 : rpcs * 1e6 / records;
    }
}
