package io.nearstream.benchmarks;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NearstreamRecord;
import io.nearstream.client.NettyNearstreamClient;
import io.nearstream.flink.source.NearstreamSourceOptions;
import io.nearstream.flink.source.enumerator.StreamLocality;
import io.nearstream.flink.source.metrics.NearstreamSourceReaderMetrics;
import io.nearstream.flink.source.reader.RecordRun;
import io.nearstream.flink.source.reader.push.PushElection;
import io.nearstream.flink.source.reader.push.PushSplitReader;
import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry;
import io.nearstream.flink.source.split.NearstreamSplit;
import java.util.List;
import java.util.UUID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;
import org.apache.flink.connector.base.source.reader.splitreader.SplitReader;
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
 * The push reader alone, no Flink operators: one {@link PushSplitReader} reads the same pre-loaded
 * stream as {@link PullReaderBenchmark} (100-byte records, 4 streamlets, 64 KiB chunks) from the
 * earliest position to the tail, through the broker's shared-memory slots ({@code slotBytes} each,
 * {@code slotsPerRing} per ring), so both run side by side in one JMH run.
 *
 * <p>It is driven only through {@link SplitReader} and {@link RecordsWithSplitIds}, exactly as
 * Flink's split fetcher and {@code SourceReaderBase} drive it: bounded splits assigned, {@code
 * fetch()} until every split finished, each batch walked with {@code nextSplit()} / {@code
 * nextRecordFromSplit()} run by run, every record made as the emitter makes it ({@link
 * RecordRun#record(int)}, which copies its value out of the slot), its {@code byte[]} value touched
 * (its length summed, the record handed to a {@link Blackhole}), then {@code recycle()}. So
 * whatever the reader does per record (copy the value out of the slot when it is fetched, or when
 * it is handed out) and per batch (release its slot right away, or in {@code recycle()}) is
 * measured.
 *
 * <p>Each invocation creates a reader on its own connection (the reader closes it), which joins the
 * JVM's {@link PushSubscriptionRegistry} as subtask 0 of a source of its own: its push subscribe,
 * the region mapping and the close are part of the invocation, about 0.1 % of it at full size. The
 * score is records per millisecond; {@code slotsRead} (the {@code fetchRpcs} secondary result) is
 * slots consumed, and the trial's summary line compares it with the broker's {@code
 * nearstream_push_slots_published_total}.
 */
@OperationsPerInvocation(BenchmarkBase.RECORDS_PER_INVOCATION)
public class PushReaderBenchmark extends PreloadedStreamBenchmark {

    /** Streamlets of the stream, one split each, all assigned to the one reader. */
    @Param({"4"})
    public int streamlets;

    /** Size of the pre-loaded chunks (the producer's batch size). */
    @Param({"65536"})
    public int chunkBytes;

    /** Bytes of one shared-memory slot. */
    @Param({"1048576"})
    public int slotBytes;

    /** Slots per ring. */
    @Param({"8"})
    public int slotsPerRing;

    /**
     * How the broker fills the slots: {@code binary} (copies every record) or {@code binary-view}
     * (16-byte views into its segment files, which the reader maps and copies each record from).
     * The broker runs with {@code --push-segment-files always}, so the pre-loaded segments are
     * files the views can point into.
     */
    @Param({"binary", "binary-view"})
    public String slotFormat;

    private List<NearstreamSplit> splits;
    private Configuration config;

    public static void main(String[] args) throws Exception {
        Options options =
                new OptionsBuilder().include(PushReaderBenchmark.class.getSimpleName()).build();
        new Runner(options).run();
    }

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        startStream(streamlets, chunkBytes, "--push-segment-files", "always");
        splits = stream.boundedSplits();
        config = new Configuration();
        config.set(NearstreamSourceOptions.PUSH_SLOT_BYTES, slotBytes);
        config.set(NearstreamSourceOptions.PUSH_SLOTS_PER_RING, slotsPerRing);
        config.set(NearstreamSourceOptions.PUSH_SLOT_FORMAT, slotFormat);
    }

    @Override
    protected String brokerCounter() {
        return "nearstream_push_slots_published_total";
    }

    @Override
    protected String requestsName() {
        return "slots";
    }

    @Benchmark
    public void pushReader(FetchCounters counters, Blackhole bh) throws Exception {
        NearstreamSourceReaderMetrics metrics =
                new NearstreamSourceReaderMetrics(
                        UnregisteredMetricsGroup.createSourceReaderMetricGroup());
        NearstreamClient client = NettyNearstreamClient.connect(stream.broker().address());
        PushSubscriptionRegistry.Key key =
                new PushSubscriptionRegistry.Key(
                        stream.broker().address(), stream.stream(), UUID.randomUUID().toString());
        SplitReader<RecordRun, NearstreamSplit> reader =
                new PushSplitReader(
                        client,
                        stream.stream(),
                        config,
                        metrics,
                        PushSubscriptionRegistry.INSTANCE,
                        // One reader of a standalone broker: its own JVM subscribes.
                        new PushElection(StreamLocality.STANDALONE_BROKER, event -> {}),
                        key,
                        0);
        long records = 0;
        long valueBytes = 0;
        try {
            reader.handleSplitsChanges(new SplitsAddition<>(splits));
            int finished = 0;
            while (finished < splits.size()) {
                RecordsWithSplitIds<RecordRun> batch = reader.fetch();
                while (batch.nextSplit() != null) {
                    RecordRun run;
                    while ((run = batch.nextRecordFromSplit()) != null) {
                        for (int i = 0; i < run.size(); i++) {
                            NearstreamRecord record = run.record(i);
                            byte[] value = record.value();
                            valueBytes += value.length;
                            bh.consume(record);
                        }
                        records += run.size();
                    }
                }
                finished += batch.finishedSplits().size();
                batch.recycle();
            }
        } finally {
            reader.close(); // leaves the registry (PushClose) and closes the connection
        }
        bh.consume(valueBytes);
        invocationDone(counters, metrics.fetchRequests(), records, metrics.numBytesIn());
    }
}
