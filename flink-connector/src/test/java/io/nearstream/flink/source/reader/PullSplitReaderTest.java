package io.nearstream.flink.source.reader;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.FetchEntry;
import io.nearstream.client.FollowerReads;
import io.nearstream.client.NearstreamRecord;
import io.nearstream.client.Position;
import io.nearstream.client.RecordFilter;
import io.nearstream.client.StatusCode;
import io.nearstream.flink.source.NearstreamException;
import io.nearstream.flink.source.NearstreamSourceOptions;
import io.nearstream.flink.source.metrics.NearstreamSourceReaderMetrics;
import io.nearstream.flink.source.split.NearstreamSplit;
import io.nearstream.flink.source.testutils.FakeNearstreamClient;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsAddition;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsRemoval;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The pull split reader with a fake broker: positions, skip, stop, pause, wake-up, errors. */
class PullSplitReaderTest {

    private static final String STREAM = "s";

    private FakeNearstreamClient client;
    private NearstreamSourceReaderMetrics metrics;
    private PullSplitReader reader;

    @BeforeEach
    void setUp() {
        // 256-byte segments, two per group: a few chunks per segment, many segments and groups.
        client = new FakeNearstreamClient().createStream(STREAM, 3, 256);
        metrics =
                new NearstreamSourceReaderMetrics(
                        UnregisteredMetricsGroup.createSourceReaderMetricGroup());
        reader = newReader(config(50));
    }

    @AfterEach
    void tearDown() {
        reader.close();
    }

    private static Configuration config(long maxWaitMs) {
        Configuration config = new Configuration();
        config.set(NearstreamSourceOptions.FETCH_MAX_WAIT, Duration.ofMillis(maxWaitMs));
        config.set(NearstreamSourceOptions.FETCH_MAX_BYTES_PER_STREAMLET, 300);
        config.set(NearstreamSourceOptions.FETCH_RETRY_BACKOFF, Duration.ofMillis(1));
        config.set(NearstreamSourceOptions.FETCH_RETRIES, 2);
        return config;
    }

    private PullSplitReader newReader(Configuration config) {
        return new PullSplitReader(client, STREAM, config, metrics);
    }

    /** Appends {@code chunks} chunks of {@code perChunk} records "streamlet-n" (n counts up). */
    private List<Position> fill(int streamlet, int chunks, int perChunk) {
        List<Position> positions = new ArrayList<>();
        int n = 0;
        for (int c = 0; c < chunks; c++) {
            String[] records = new String[perChunk];
            for (int r = 0; r < perChunk; r++) {
                records[r] = streamlet + "-" + n++;
            }
            positions.add(client.appendRecords(STREAM, streamlet, 1000L * c, records));
        }
        return positions;
    }

    private static NearstreamSplit split(int streamlet, Position start, int skip, Position stop) {
        return new NearstreamSplit(STREAM, streamlet, start, skip, stop);
    }

    private void add(NearstreamSplit... splits) {
        reader.handleSplitsChanges(new SplitsAddition<>(List.of(splits)));
    }

    /** Everything one fetch returned. */
    private static final class Fetched {
        final Map<String, List<NearstreamRecord>> records = new LinkedHashMap<>();
        final Set<String> finished = new HashSet<>();

        List<String> values(String splitId) {
            List<String> out = new ArrayList<>();
            for (NearstreamRecord r : records.getOrDefault(splitId, List.of())) {
                out.add(new String(r.value(), StandardCharsets.UTF_8));
            }
            return out;
        }
    }

    private Fetched fetch() throws IOException {
        RecordsWithSplitIds<RecordRun> batch = reader.fetch();
        Fetched f = new Fetched();
        String splitId;
        while ((splitId = batch.nextSplit()) != null) {
            RecordRun run;
            while ((run = batch.nextRecordFromSplit()) != null) {
                for (int i = 0; i < run.size(); i++) {
                    f.records.computeIfAbsent(splitId, k -> new ArrayList<>()).add(run.record(i));
                }
            }
        }
        f.finished.addAll(batch.finishedSplits());
        batch.recycle();
        return f;
    }

    /** Fetches until {@code splitId} finished or {@code expected} records of it came. */
    private List<String> readSplit(String splitId, int expected, Set<String> finished)
            throws IOException {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < 1000 && out.size() < expected && !finished.contains(splitId); i++) {
            Fetched f = fetch();
            out.addAll(f.values(splitId));
            finished.addAll(f.finished);
        }
        return out;
    }

    private static List<String> expected(int streamlet, int from, int to) {
        List<String> out = new ArrayList<>();
        for (int i = from; i < to; i++) {
            out.add(streamlet + "-" + i);
        }
        return out;
    }

    @Test
    void readsEveryRecordOfEveryStreamletInOrderAcrossSegmentsAndGroups() throws IOException {
        List<Position> chunks0 = fill(0, 30, 3);
        fill(1, 10, 2);
        add(split(0, Position.EARLIEST, 0, null), split(1, Position.EARLIEST, 0, null));

        List<String> s0 = new ArrayList<>();
        List<String> s1 = new ArrayList<>();
        while (s0.size() < 90 || s1.size() < 20) {
            Fetched f = fetch();
            s0.addAll(f.values("s-0"));
            s1.addAll(f.values("s-1"));
            assertThat(f.finished).isEmpty();
        }

        assertThat(s0).isEqualTo(expected(0, 0, 90));
        assertThat(s1).isEqualTo(expected(1, 0, 20));
        assertThat(chunks0.get(29).group()).isGreaterThan(2); // crossed groups and segments
        assertThat(client.openResponses()).isZero();
        assertThat(reader.positions())
                .containsEntry("s-0", client.tail(STREAM, 0))
                .containsEntry("s-1", client.tail(STREAM, 1));
    }

    @Test
    void oneFetchRpcCarriesEveryUnpausedStreamletWithItsBudget() throws IOException {
        fill(0, 5, 1);
        fill(1, 5, 1);
        add(split(0, Position.EARLIEST, 0, null), split(1, Position.EARLIEST, 0, null));

        fetch();

        assertThat(client.fetchCount()).isEqualTo(1);
        List<FetchEntry> entries = client.fetchRequests().get(0);
        assertThat(entries).extracting(FetchEntry::streamlet).containsExactly(0, 1);
        assertThat(entries).extracting(FetchEntry::maxBytes).containsOnly(300);
    }

    @Test
    void withFollowerReadsOffEveryFetchGoesToTheLeaders() throws IOException {
        fill(0, 2, 1);
        add(split(0, Position.EARLIEST, 0, null));

        fetch();

        assertThat(client.fetchFollowerReads()).containsExactly(Optional.empty());
    }

    @Test
    void withFollowerReadsEachStreamletIsFetchedFromItsServingBroker() throws IOException {
        // Streamlet 0 is served by broker 7 on this host; the view does not know streamlet 1.
        reader = new PullSplitReader(client, STREAM, config(50), metrics, s -> s == 0 ? 7 : -1);
        fill(0, 2, 1);
        fill(1, 2, 1);
        add(split(0, Position.EARLIEST, 0, null), split(1, Position.EARLIEST, 0, null));

        assertThat(fetch().records).containsOnlyKeys("s-0", "s-1");

        List<Optional<FollowerReads>> given = client.fetchFollowerReads();
        assertThat(given).hasSize(1);
        FollowerReads reads = given.get(0).orElseThrow();
        assertThat(reads.chosen(0)).hasValue(7);
        assertThat(reads.chosen(1)).isEmpty();

        reader.handleSplitsChanges(
                new SplitsRemoval<>(List.of(split(0, Position.EARLIEST, 0, null))));
        assertThat(reads.chosen(0)).as("a removed split").isEmpty();
    }

    @Test
    void recordsCarryTheirChunkPositionIndexAndTimestamp() throws IOException {
        List<Position> chunks = fill(0, 3, 2);
        add(split(0, Position.EARLIEST, 0, null));

        List<NearstreamRecord> records = new ArrayList<>();
        while (records.size() < 6) {
            records.addAll(fetch().records.getOrDefault("s-0", List.of()));
        }

        NearstreamRecord fourth = records.get(3);
        assertThat(fourth.chunk()).isEqualTo(chunks.get(1));
        assertThat(fourth.index()).isEqualTo(1);
        assertThat(fourth.chunkTimestampMs()).isEqualTo(1000L);
        assertThat(fourth.streamlet()).isZero();
        assertThat(new String(fourth.value(), StandardCharsets.UTF_8)).isEqualTo("0-3");
    }

    @Test
    void resumesInsideAChunkSkippingTheRecordsAlreadyEmitted() throws IOException {
        List<Position> chunks = fill(0, 6, 4);
        add(split(0, chunks.get(2), 3, null));

        List<String> read = readSplit("s-0", 13, new HashSet<>());

        // Chunk 2 holds records 8..11; 8, 9 and 10 were emitted before the checkpoint.
        assertThat(read).isEqualTo(expected(0, 11, 24));
    }

    /** A reader whose source has {@code filter}. */
    private void filterWith(RecordFilter filter) {
        reader.close();
        Configuration config = config(50);
        config.set(NearstreamSourceOptions.RECORD_FILTER, filter.toSpec());
        reader = newReader(config);
    }

    @Test
    void aRecordFilterKeepsThePassingRecordsIndexedAmongThemselves() throws IOException {
        filterWith(RecordFilter.jsonFieldIn("t", "view"));
        Position c0 = client.appendRecords(STREAM, 0, 0, "{\"t\":\"view\",\"n\":0}", "{}");
        client.appendRecords(STREAM, 0, 1000, "{\"t\":\"view\",\"n\":2}", "{\"t\":\"buy\"}");
        client.appendRecords(STREAM, 0, 2000, "{\"t\":\"buy\"}", "not json"); // none passes
        Position c3 =
                client.appendRecords(
                        STREAM,
                        0,
                        3000,
                        "{\"t\":\"click\"}",
                        "{\"t\":\"view\",\"n\":6}",
                        "{\"t\":\"view\",\"n\":7}");
        add(split(0, c0, 0, null));

        List<NearstreamRecord> records = new ArrayList<>();
        for (int i = 0; i < 100 && records.size() < 4; i++) {
            records.addAll(fetch().records.getOrDefault("s-0", List.of()));
        }

        assertThat(records)
                .extracting(r -> new String(r.value(), StandardCharsets.UTF_8))
                .containsExactly(
                        "{\"t\":\"view\",\"n\":0}",
                        "{\"t\":\"view\",\"n\":2}",
                        "{\"t\":\"view\",\"n\":6}",
                        "{\"t\":\"view\",\"n\":7}");
        // Indexes count the chunk's passing records: n=7 is the second of chunk 3's.
        assertThat(records.get(3).chunk()).isEqualTo(c3);
        assertThat(records.get(3).index()).isEqualTo(1);
        assertThat(records.get(2).index()).isZero();
        assertThat(records.get(3).chunkTimestampMs()).isEqualTo(3000L);
    }

    @Test
    void underARecordFilterAResumeSkipsPassingRecords() throws IOException {
        filterWith(RecordFilter.bytesContain("view".getBytes(StandardCharsets.UTF_8)));
        Position c0 = client.appendRecords(STREAM, 0, 0, "view-0", "buy-1", "view-2", "view-3");
        client.appendRecords(STREAM, 0, 1000, "click-4");
        client.appendRecords(STREAM, 0, 2000, "view-5");
        // Two of chunk 0's passing records were emitted before the checkpoint.
        add(split(0, c0, 2, null));

        assertThat(readSplit("s-0", 2, new HashSet<>())).containsExactly("view-3", "view-5");
    }

    @Test
    void underARecordFilterABoundedSplitFinishesPastChunksWithoutPassingRecords()
            throws IOException {
        filterWith(RecordFilter.bytesContain("view".getBytes(StandardCharsets.UTF_8)));
        Position c0 = client.appendRecords(STREAM, 0, 0, "view-0");
        client.appendRecords(STREAM, 0, 1000, "click-1");
        client.appendRecords(STREAM, 0, 2000, "click-2");
        Position stop = client.appendRecords(STREAM, 0, 3000, "view-3");
        add(split(0, c0, 0, stop));

        Set<String> finished = new HashSet<>();
        assertThat(readSplit("s-0", 100, finished)).containsExactly("view-0");
        assertThat(finished).containsExactly("s-0");
        assertThat(reader.positions()).isEmpty();
    }

    @Test
    void finishesABoundedSplitAtItsStoppingPositionExclusive() throws IOException {
        List<Position> chunks = fill(0, 12, 2);
        add(split(0, Position.EARLIEST, 0, chunks.get(7)));

        Set<String> finished = new HashSet<>();
        List<String> read = readSplit("s-0", 100, finished);

        assertThat(read).isEqualTo(expected(0, 0, 14));
        assertThat(finished).containsExactly("s-0");
        assertThat(reader.positions()).isEmpty();
        assertThat(client.openResponses()).isZero();
    }

    @Test
    void stopsAtTheTailTakenAtStartEvenWhenMoreDataArrives() throws IOException {
        fill(0, 4, 2);
        Position tail = client.tail(STREAM, 0);
        client.appendRecords(STREAM, 0, 9, "late-1", "late-2");
        add(split(0, Position.EARLIEST, 0, tail));

        Set<String> finished = new HashSet<>();
        List<String> read = readSplit("s-0", 100, finished);

        assertThat(read).isEqualTo(expected(0, 0, 8));
        assertThat(finished).containsExactly("s-0");
    }

    @Test
    void splitsThatStartAtTheirStopFinishWithoutAnRpc() throws IOException {
        // A streamlet that was empty when the bounded job started: start = stop = all-zero.
        add(split(2, Position.EARLIEST, 0, Position.EARLIEST));

        Fetched f = fetch();

        assertThat(f.finished).containsExactly("s-2");
        assertThat(f.records).isEmpty();
        assertThat(client.fetchCount()).isZero();
    }

    @Test
    void pausedSplitsAreLeftOutOfFetchesUntilResumed() throws IOException {
        fill(0, 2, 1);
        fill(1, 2, 1);
        NearstreamSplit s0 = split(0, Position.EARLIEST, 0, null);
        NearstreamSplit s1 = split(1, Position.EARLIEST, 0, null);
        add(s0, s1);

        reader.pauseOrResumeSplits(List.of(s1), List.of());
        Fetched paused = fetch();
        reader.pauseOrResumeSplits(List.of(), List.of(s1));
        Fetched resumed = fetch();

        assertThat(client.fetchRequests().get(0))
                .extracting(FetchEntry::streamlet)
                .containsExactly(0);
        assertThat(paused.records).containsOnlyKeys("s-0");
        assertThat(client.fetchRequests().get(1))
                .extracting(FetchEntry::streamlet)
                .containsExactly(0, 1);
        assertThat(resumed.values("s-1")).isEqualTo(expected(1, 0, 2));
    }

    @Test
    void allSplitsPausedWaitsInsteadOfSpinning() throws Exception {
        NearstreamSplit s0 = split(0, Position.EARLIEST, 0, null);
        add(s0);
        reader.pauseOrResumeSplits(List.of(s0), List.of());

        long start = System.nanoTime();
        fetch();

        assertThat(client.fetchCount()).isZero();
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start))
                .isGreaterThanOrEqualTo(40);
    }

    @Test
    void wakeUpEndsALongPollPromptly() throws Exception {
        reader.close();
        reader = newReader(config(30_000));
        add(split(0, Position.EARLIEST, 0, null));

        CompletableFuture<Fetched> fetching =
                CompletableFuture.supplyAsync(
                        () -> {
                            try {
                                return fetch();
                            } catch (IOException e) {
                                throw new RuntimeException(e);
                            }
                        });
        while (client.fetchCount() == 0) {
            Thread.sleep(5);
        }
        Thread.sleep(50);
        assertThat(fetching).isNotDone();

        long start = System.nanoTime();
        reader.wakeUp();
        Fetched f = fetching.get(5, TimeUnit.SECONDS);

        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(2_000);
        assertThat(f.records).isEmpty();
        // The abandoned long poll is answered by the next append and closed unread; the data
        // comes again with the next fetch.
        client.appendRecords(STREAM, 0, 1, "x");
        assertThat(readSplit("s-0", 1, new HashSet<>())).containsExactly("x");
        assertThat(client.openResponses()).isZero();
    }

    @Test
    void wakeUpBeforeFetchMakesTheNextFetchReturnAtOnce() throws Exception {
        reader.close();
        reader = newReader(config(30_000));
        add(split(0, Position.EARLIEST, 0, null));

        reader.wakeUp();
        long start = System.nanoTime();
        fetch();

        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(2_000);
    }

    @Test
    void retriableFailuresAreRetriedThenSurfaceAsIOException() throws IOException {
        fill(0, 1, 1);
        add(split(0, Position.EARLIEST, 0, null));

        client.failFetches(2, StatusCode.SHUTTING_DOWN);
        assertThat(fetch().records).isEmpty();
        assertThat(fetch().records).isEmpty();
        assertThat(fetch().values("s-0")).containsExactly("0-0");

        client.failFetches(10, StatusCode.IO_ERROR);
        fetch();
        fetch();
        assertThatThrownBy(this::fetch)
                .isInstanceOf(IOException.class)
                .hasMessageContaining("3 times in a row")
                .hasRootCauseMessage("IO_ERROR: injected fetch failure");
    }

    @Test
    void fatalBrokerErrorsSurfaceAsNearstreamException() {
        fill(0, 1, 1);
        add(split(0, Position.EARLIEST, 0, null));
        client.failEntries(0, StatusCode.STREAMLET_NOT_FOUND);

        assertThatThrownBy(this::fetch)
                .isInstanceOf(NearstreamException.class)
                .hasMessageContaining("streamlet 0 of stream 's'")
                .hasMessageContaining("STREAMLET_NOT_FOUND")
                .satisfies(
                        e ->
                                assertThat(((NearstreamException) e).status())
                                        .contains(StatusCode.STREAMLET_NOT_FOUND));
        assertThat(client.openResponses()).isZero();
    }

    @Test
    void aPositionThatIsNoChunkFailsWithOutOfRange() {
        fill(0, 2, 1);
        add(split(0, new Position(1, 1, 7), 0, null));

        assertThatThrownBy(this::fetch)
                .isInstanceOf(NearstreamException.class)
                .hasMessageContaining("POSITION_OUT_OF_RANGE")
                .hasMessageContaining("retention");
    }

    @Test
    void aCorruptChunkFailsWithCorruptChunk() {
        byte[] chunk =
                new io.nearstream.client.ChunkBuilder()
                        .add("intact".getBytes(StandardCharsets.UTF_8))
                        .build(0, 0, 1);
        chunk[chunk.length - 1] ^= 0x5A; // payload no longer matches its CRC
        client.appendChunk(STREAM, 0, chunk);
        add(split(0, Position.EARLIEST, 0, null));

        assertThatThrownBy(this::fetch)
                .isInstanceOf(NearstreamException.class)
                .hasMessageContaining("Reading the chunks of streamlet 0")
                .satisfies(
                        e ->
                                assertThat(((NearstreamException) e).status())
                                        .contains(StatusCode.CORRUPT_CHUNK));
        assertThat(client.openResponses()).isZero();
    }

    @Test
    void removedSplitsAreNoLongerFetched() throws IOException {
        NearstreamSplit s0 = split(0, Position.EARLIEST, 0, null);
        NearstreamSplit s1 = split(1, Position.EARLIEST, 0, null);
        add(s0, s1);
        reader.handleSplitsChanges(new SplitsRemoval<>(List.of(s0)));

        fetch();

        assertThat(client.fetchRequests().get(0))
                .extracting(FetchEntry::streamlet)
                .containsExactly(1);
    }

    @Test
    void splitsOfAnotherStreamAreRefused() {
        assertThatThrownBy(
                        () ->
                                reader.handleSplitsChanges(
                                        new SplitsAddition<>(
                                                List.of(
                                                        new NearstreamSplit(
                                                                "other",
                                                                0,
                                                                Position.EARLIEST,
                                                                0,
                                                                null)))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'other'");
    }

    @Test
    void countsBytesFetchesAndPendingData() throws IOException {
        fill(0, 10, 2);
        add(split(0, Position.EARLIEST, 0, null));

        int first = fetch().values("s-0").size(); // 300 bytes budget: part of the streamlet

        assertThat(first).isBetween(1, 19);
        assertThat(metrics.fetchRequests()).isEqualTo(1);
        assertThat(metrics.pendingBytes()).isPositive();
        assertThat(metrics.pendingRecords()).isPositive();
        assertThat(readSplit("s-0", 20 - first, new HashSet<>())).hasSize(20 - first);
        assertThat(metrics.pendingBytes()).isZero();
    }

    @Test
    void closeClosesTheClient() {
        reader.close();
        assertThat(client.isClosed()).isTrue();
    }
}
