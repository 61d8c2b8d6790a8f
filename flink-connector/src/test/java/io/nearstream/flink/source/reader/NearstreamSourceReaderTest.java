package io.nearstream.flink.source.reader;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.NearstreamRecord;
import io.nearstream.client.Position;
import io.nearstream.flink.source.NearstreamSourceOptions;
import io.nearstream.flink.source.metrics.NearstreamSourceReaderMetrics;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry;
import io.nearstream.flink.source.split.NearstreamSplit;
import io.nearstream.flink.source.testutils.FakeNearstreamClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.source.reader.fetcher.SingleThreadFetcherManager;
import org.apache.flink.connector.testutils.source.reader.TestingReaderContext;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.metrics.groups.InternalSourceReaderMetricGroup;
import org.apache.flink.runtime.metrics.groups.UnregisteredMetricGroups;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The reader, emitter and split state together: checkpoints resume exactly. */
class NearstreamSourceReaderTest {

    private static final String STREAM = "s";
    private static final int STREAMLETS = 3;
    private static final int CHUNKS = 10;
    private static final int PER_CHUNK = 5;

    private FakeNearstreamClient client;

    /** The operator metrics the reader reports to (their counters are real, unlike mocks'). */
    private InternalSourceReaderMetricGroup readerMetrics;

    @BeforeEach
    void setUp() {
        readerMetrics =
                InternalSourceReaderMetricGroup.wrap(
                        UnregisteredMetricGroups.createUnregisteredOperatorMetricGroup());
        client = new FakeNearstreamClient().createStream(STREAM, STREAMLETS, 512);
        for (int s = 0; s < STREAMLETS; s++) {
            int n = 0;
            for (int c = 0; c < CHUNKS; c++) {
                String[] records = new String[PER_CHUNK];
                for (int r = 0; r < PER_CHUNK; r++) {
                    records[r] = s + "-" + n++;
                }
                client.appendRecords(STREAM, s, 10_000L * s + c, records);
            }
        }
    }

    private NearstreamSourceReader<String> reader() {
        return reader(NearstreamRecordDeserializationSchema.utf8());
    }

    private NearstreamSourceReader<String> reader(
            NearstreamRecordDeserializationSchema<String> deserializer) {
        Configuration config = new Configuration();
        config.set(NearstreamSourceOptions.FETCH_MAX_WAIT, Duration.ofMillis(20));
        config.set(NearstreamSourceOptions.FETCH_MAX_BYTES_PER_STREAMLET, 200);
        NearstreamSourceReaderMetrics metrics =
                new NearstreamSourceReaderMetrics(
                        UnregisteredMetricsGroup.createSourceReaderMetricGroup());
        NearstreamSourceReader<String> reader =
                new NearstreamSourceReader<>(
                        new SingleThreadFetcherManager<>(
                                () -> new PullSplitReader(client, STREAM, config, metrics), config),
                        new NearstreamRecordEmitter<>(
                                deserializer,
                                readerMetrics.getIOMetricGroup().getNumRecordsInCounter()),
                        config,
                        new TestingReaderContext(new Configuration(), readerMetrics),
                        new PushSubscriptionRegistry(),
                        Map.of(),
                        split -> ReadModeFetcherManager.PULLED);
        reader.start();
        return reader;
    }

    private static List<NearstreamSplit> splitsFromEarliest(Position stop) {
        List<NearstreamSplit> splits = new ArrayList<>();
        for (int s = 0; s < STREAMLETS; s++) {
            splits.add(new NearstreamSplit(STREAM, s, Position.EARLIEST, 0, stop));
        }
        return splits;
    }

    /** Polls until {@code n} more records were emitted or the input ended. */
    private static InputStatus poll(
            NearstreamSourceReader<String> reader, CapturingOutput output, int n) throws Exception {
        int target = output.values.size() + n;
        InputStatus status = InputStatus.MORE_AVAILABLE;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (output.values.size() < target && System.nanoTime() < deadline) {
            status = reader.pollNext(output);
            if (status == InputStatus.END_OF_INPUT) {
                break;
            }
            if (status == InputStatus.NOTHING_AVAILABLE) {
                reader.isAvailable().get(5, TimeUnit.SECONDS);
            }
        }
        return status;
    }

    private static List<String> all() {
        List<String> out = new ArrayList<>();
        for (int s = 0; s < STREAMLETS; s++) {
            for (int i = 0; i < CHUNKS * PER_CHUNK; i++) {
                out.add(s + "-" + i);
            }
        }
        return out;
    }

    @Test
    void resumesExactlyFromACheckpoint() throws Exception {
        CapturingOutput before = new CapturingOutput();
        List<NearstreamSplit> checkpoint;
        try (NearstreamSourceReader<String> first = reader()) {
            first.addSplits(splitsFromEarliest(null));
            poll(first, before, 37); // 37 is no multiple of the chunk size
            checkpoint = first.snapshotState(1);
        }
        assertThat(checkpoint).hasSize(STREAMLETS);
        // A checkpoint names the chunk last emitted from and how many of its records are done.
        assertThat(checkpoint).anySatisfy(s -> assertThat(s.recordsToSkip()).isPositive());

        CapturingOutput after = new CapturingOutput();
        try (NearstreamSourceReader<String> second = reader()) {
            second.addSplits(checkpoint);
            poll(second, after, all().size() - before.values.size());
        }

        List<String> union = new ArrayList<>(before.values);
        union.addAll(after.values);
        assertThat(union).containsExactlyInAnyOrderElementsOf(all());
        // And in order within each streamlet.
        for (int s = 0; s < STREAMLETS; s++) {
            String prefix = s + "-";
            List<String> ofStreamlet = new ArrayList<>();
            union.stream().filter(v -> v.startsWith(prefix)).forEach(ofStreamlet::add);
            assertThat(ofStreamlet)
                    .isEqualTo(all().stream().filter(v -> v.startsWith(prefix)).toList());
        }
        assertThat(client.openResponses()).isZero();
    }

    @Test
    void aSplitRestoredInsideAChunkResumesAtItsNextRecord() throws Exception {
        CapturingOutput before = new CapturingOutput();
        NearstreamSplit emittedUpTo;
        try (NearstreamSourceReader<String> first = reader()) {
            first.addSplits(List.of(splitsFromEarliest(null).get(1)));
            poll(first, before, 12);
            emittedUpTo = first.snapshotState(1).get(0);
        }
        // Written by an older reader, or by one that failed inside a chunk: 2 of the chunk done.
        assertThat(emittedUpTo.recordsToSkip()).isEqualTo(PER_CHUNK);
        NearstreamSplit insideTheChunk =
                emittedUpTo.withStartingPosition(emittedUpTo.startingPosition(), 2);
        int chunkStart = before.values.size() - PER_CHUNK;

        CapturingOutput after = new CapturingOutput();
        try (NearstreamSourceReader<String> second = reader()) {
            second.addSplits(List.of(insideTheChunk));
            poll(second, after, CHUNKS * PER_CHUNK - chunkStart - 2);
        }

        List<String> expected = all().stream().filter(v -> v.startsWith("1-")).toList();
        assertThat(after.values).isEqualTo(expected.subList(chunkStart + 2, expected.size()));
    }

    @Test
    void aSchemaReadingTheWholeRecordGetsEachRecordsStreamletAndIndex() throws Exception {
        NearstreamRecordDeserializationSchema<String> described =
                new NearstreamRecordDeserializationSchema<>() {
                    @Override
                    public void deserialize(NearstreamRecord record, Collector<String> out) {
                        out.collect(
                                record.streamlet()
                                        + "/"
                                        + record.index()
                                        + "/"
                                        + new String(record.value(), StandardCharsets.UTF_8));
                    }

                    @Override
                    public TypeInformation<String> getProducedType() {
                        return Types.STRING;
                    }
                };
        CapturingOutput output = new CapturingOutput();
        try (NearstreamSourceReader<String> reader = reader(described)) {
            reader.addSplits(List.of(splitsFromEarliest(null).get(2)));
            poll(reader, output, CHUNKS * PER_CHUNK);
        }
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < CHUNKS * PER_CHUNK; i++) {
            expected.add("2/" + (i % PER_CHUNK) + "/2-" + i);
        }
        assertThat(output.values).isEqualTo(expected);
    }

    @Test
    void numRecordsInCountsRecordsNotRuns() throws Exception {
        CapturingOutput output = new CapturingOutput();
        try (NearstreamSourceReader<String> reader = reader()) {
            reader.addSplits(splitsFromEarliest(null));
            poll(reader, output, all().size());
        }
        assertThat(output.values).hasSize(all().size());
        assertThat(readerMetrics.getIOMetricGroup().getNumRecordsInCounter().getCount())
                .isEqualTo(all().size());
    }

    @Test
    void emitsTheChunkTimestampAndEndsBoundedSplits() throws Exception {
        CapturingOutput output = new CapturingOutput();
        try (NearstreamSourceReader<String> reader = reader()) {
            List<NearstreamSplit> bounded = new ArrayList<>();
            for (int s = 0; s < STREAMLETS; s++) {
                bounded.add(
                        new NearstreamSplit(
                                STREAM, s, Position.EARLIEST, 0, client.tail(STREAM, s)));
            }
            reader.addSplits(bounded);
            reader.notifyNoMoreSplits();

            InputStatus status = poll(reader, output, Integer.MAX_VALUE);

            assertThat(status).isEqualTo(InputStatus.END_OF_INPUT);
            assertThat(output.values).containsExactlyInAnyOrderElementsOf(all());
            int i = output.values.indexOf("2-7"); // streamlet 2, chunk 1
            assertThat(output.timestamps.get(i)).isEqualTo(20_001L);
            assertThat(reader.snapshotState(2)).isEmpty();
        }
    }

    /** Collects what the reader emits, with timestamps. */
    private static final class CapturingOutput implements ReaderOutput<String> {
        final List<String> values = new ArrayList<>();
        final List<Long> timestamps = new ArrayList<>();

        @Override
        public void collect(String record) {
            collect(record, Long.MIN_VALUE);
        }

        @Override
        public void collect(String record, long timestamp) {
            values.add(record);
            timestamps.add(timestamp);
        }

        @Override
        public void emitWatermark(Watermark watermark) {}

        @Override
        public void markIdle() {}

        @Override
        public void markActive() {}

        @Override
        public SourceOutput<String> createOutputForSplit(String splitId) {
            return this;
        }

        @Override
        public void releaseOutputForSplit(String splitId) {}
    }
}
