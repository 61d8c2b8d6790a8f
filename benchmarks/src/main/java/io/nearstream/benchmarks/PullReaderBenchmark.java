package io.nearstream.benchmarks;

import io.nearstream.flink.source.NearstreamSourceOptions;
import io.nearstream.flink.source.metrics.NearstreamSourceReaderMetrics;
import io.nearstream.flink.source.reader.PullSplitReader;
import io.nearstream.flink.source.reader.RecordRun;
import io.nearstream.flink.source.split.NearstreamSplit;
import java.util.List;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsAddition;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.infra.Blackhole;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;

/**
 * The pull reader alone, no Flink operators: one {@link PullSplitReader} reads a pre-loaded stream
 * of 100-byte records from the earliest position to the tail (bounded splits), the way Flink's
 * split fetcher drives it: {@code fetch()} until every split finished, draining each {@link
 * RecordsWithSplitIds} run by run, making each record as the emitter does ({@link
 * RecordRun#record(int)}: the value the reader copied into its own {@code byte[]}), and recycling
 * the batch; the benchmark hands each record to a {@link Blackhole}.
 *
 * <p>One invocation reads the whole stream ({@value BenchmarkBase#RECORDS_PER_INVOCATION} records
 * at full size), so the score is records per millisecond. {@code fetchBytes} is the byte budget of
 * one Fetch RPC over all streamlets ({@code nearstream.source.fetch.max-bytes}; each streamlet gets
 * {@code fetchBytes / streamlets}, but the broker returns at least one whole chunk per streamlet).
 * Secondary results: fetch RPCs, records and bytes per iteration (see {@link FetchCounters}); the
 * trial's RPCs per million records, as the client and the broker counted them, are printed when the
 * trial ends.
 *
 * <p>The reader shares the trial's client connection and is not closed ({@code close()} would close
 * the client): a real reader connects once and reads for the life of the job.
 */
@OperationsPerInvocation(BenchmarkBase.RECORDS_PER_INVOCATION)
public class PullReaderBenchmark extends PreloadedStreamBenchmark {

    /** Streamlets of the stream, one split each, all assigned to the one reader. */
    @Param({"4"})
    public int streamlets;

    /** Byte budget of one Fetch RPC (over all streamlets). */
    @Param({"131072", "1048576", "4194304"})
    public int fetchBytes;

    /** Size of the pre-loaded chunks (the producer's batch size). */
    @Param({"65536"})
    public int chunkBytes;

    private List<NearstreamSplit> splits;
    private Configuration config;

    public static void main(String[] args) throws Exception {
        Options options =
                new OptionsBuilder().include(PullReaderBenchmark.class.getSimpleName()).build();
        new Runner(options).run();
    }

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        startStream(streamlets, chunkBytes);
        splits = stream.boundedSplits();
        config = new Configuration();
        config.set(NearstreamSourceOptions.FETCH_MAX_BYTES, fetchBytes);
        config.set(NearstreamSourceOptions.FETCH_MAX_BYTES_PER_STREAMLET, fetchBytes);
    }

    @Benchmark
    public void pullReaderFetchSize(FetchCounters counters, Blackhole bh) throws Exception {
        NearstreamSourceReaderMetrics metrics =
                new NearstreamSourceReaderMetrics(
                        UnregisteredMetricsGroup.createSourceReaderMetricGroup());
        PullSplitReader reader =
                new PullSplitReader(stream.client(), stream.stream(), config, metrics);
        reader.handleSplitsChanges(new SplitsAddition<>(splits));

        long records = 0;
        int finished = 0;
        while (finished < splits.size()) {
            RecordsWithSplitIds<RecordRun> batch = reader.fetch();
            while (batch.nextSplit() != null) {
                RecordRun run;
                while ((run = batch.nextRecordFromSplit()) != null) {
                    for (int i = 0; i < run.size(); i++) {
                        bh.consume(run.record(i));
                    }
                    records += run.size();
                }
            }
            finished += batch.finishedSplits().size();
            batch.recycle();
        }
        long rpcs = metrics.fetchRequests();
        long bytes = metrics.numBytesIn();
        invocationDone(counters, rpcs, records, bytes);
    }
}
