package io.nearstream.benchmarks;

import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * Secondary results of the fetch benchmarks, per measurement iteration: JMH prints them after the
 * primary score and writes them to the result file as {@code <benchmark>:<name>} rows.
 *
 * <ul>
 *   <li>{@code fetchRpcs}, {@code recordsRead}: totals of the iteration (summed over iterations in
 *       the final result); RPCs per million records = {@code fetchRpcs / recordsRead * 1e6}.
 *   <li>{@code bytesRead}: chunk bytes (headers included) of the iteration.
 * </ul>
 */
@State(Scope.Thread)
@AuxCounters(AuxCounters.Type.EVENTS)
public class FetchCounters {

    public long fetchRpcs;
    public long recordsRead;
    public long bytesRead;

    @Setup(Level.Iteration)
    public void reset() {
        fetchRpcs = 0;
        recordsRead = 0;
        bytesRead = 0;
    }

    /** Adds one invocation's figures. */
    void add(long rpcs, long records, long bytes) {
        fetchRpcs += rpcs;
        recordsRead += records;
        bytesRead += bytes;
    }
}
