package io.nearstream.flink.source.reader.push;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.NearstreamRecord;
import io.nearstream.client.Position;
import io.nearstream.client.PushRingSpec;
import io.nearstream.client.PushSplitStart;
import io.nearstream.client.RecordFilter;
import io.nearstream.client.SlotFormat;
import io.nearstream.flink.source.NearstreamSourceOptions;
import io.nearstream.flink.source.metrics.NearstreamSourceReaderMetrics;
import io.nearstream.flink.source.reader.RecordRun;
import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry.Key;
import io.nearstream.flink.source.split.NearstreamSplit;
import io.nearstream.flink.source.testutils.FakeNearstreamClient;
import io.nearstream.flink.source.testutils.PushTestRegion;
import io.nearstream.flink.source.testutils.PushTestRegion.Chunk;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsAddition;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The push split reader against a region written by {@link PushTestRegion}, with fake brokers. */
class PushSplitReaderTest {

    private static final String STREAM = "s";
    private static final long EPOCH = 7;
    private static final int SLOTS = 4;
    private static final int SLOT_BYTES = 4096;

    @TempDir Path dir;

    private final PushSubscriptionRegistry registry = new PushSubscriptionRegistry();
    private final Key key = new Key("127.0.0.1:7420", STREAM, "source");
    private final List<PushSplitReader> readers = new ArrayList<>();
    private Path regionPath;
    private PushTestRegion region;

    @BeforeEach
    void setUp() throws IOException {
        regionPath = dir.resolve("region");
    }

    @AfterEach
    void tearDown() throws Exception {
        for (PushSplitReader r : readers) {
            r.close();
        }
    }

    private PushSplitReader newReader(int subtask) {
        return newReader(subtask, RecordFilter.none());
    }

    private PushSplitReader newReader(int subtask, RecordFilter filter) {
        return newReader(subtask, filter, SlotFormat.BINARY);
    }

    private PushSplitReader newReader(int subtask, RecordFilter filter, SlotFormat format) {
        FakeNearstreamClient client =
                new FakeNearstreamClient().setPushRegion(regionPath.toString(), EPOCH);
        Configuration config = new Configuration();
        config.set(NearstreamSourceOptions.PUSH_SLOTS_PER_RING, SLOTS);
        config.set(NearstreamSourceOptions.PUSH_SLOT_BYTES, SLOT_BYTES);
        config.set(NearstreamSourceOptions.PUSH_CONSUMER_TIMEOUT, Duration.ofSeconds(2));
        config.set(NearstreamSourceOptions.PUSH_PENDING_REFRESH_INTERVAL, Duration.ofMillis(20));
        config.set(NearstreamSourceOptions.RECORD_FILTER, filter.toSpec());
        config.set(NearstreamSourceOptions.PUSH_SLOT_FORMAT, format.configText());
        clients.put(subtask, client);
        NearstreamSourceReaderMetrics m =
                new NearstreamSourceReaderMetrics(
                        UnregisteredMetricsGroup.createSourceReaderMetricGroup());
        metrics.put(subtask, m);
        PushSplitReader r =
                new PushSplitReader(
                        client,
                        STREAM,
                        config,
                        m,
                        registry,
                        new PushElection(0, event -> {}),
                        key,
                        subtask);
        readers.add(r);
        return r;
    }

    private static NearstreamSplit split(int streamlet, Position start, int skip, Position stop) {
        return new NearstreamSplit(STREAM, streamlet, start, skip, stop);
    }

    private static Position pos(long group, long segment, int offset) {
        return new Position(group, segment, offset);
    }

    private static Chunk chunk(int streamlet, Position at, String... values) {
        List<byte[]> records = new ArrayList<>();
        for (String v : values) {
            records.add(v.getBytes(StandardCharsets.UTF_8));
        }
        return new Chunk(streamlet, at, 100, records);
    }

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

    private static Fetched fetch(PushSplitReader reader) throws IOException {
        return emit(reader.fetch());
    }

    /** Emits a batch as Flink's task thread does, then recycles it. */
    private static Fetched emit(RecordsWithSplitIds<RecordRun> batch) {
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

    /** Fetches until something arrives (or a split finishes). */
    private static Fetched fetchSome(PushSplitReader reader) throws IOException {
        for (int i = 0; i < 100; i++) {
            Fetched f = fetch(reader);
            if (!f.records.isEmpty() || !f.finished.isEmpty()) {
                return f;
            }
        }
        throw new AssertionError("nothing fetched");
    }

    @Test
    void readsPushedChunksWithTheirPositionsAndReleasesTheSlot() throws IOException {
        region = PushTestRegion.create(regionPath, EPOCH, SLOTS, SLOT_BYTES, 0);
        PushSplitReader reader = newReader(0);
        NearstreamSplit s0 = split(0, Position.EARLIEST, 0, null);
        NearstreamSplit s2 = split(2, Position.EARLIEST, 0, null);
        reader.handleSplitsChanges(new SplitsAddition<>(List.of(s0, s2)));

        region.publish(
                0,
                chunk(0, pos(1, 1, 0), "a", "b"),
                chunk(2, pos(1, 1, 0), "x"),
                chunk(0, pos(1, 1, 100), "c"));
        Fetched f = fetchSome(reader);

        assertThat(f.values(s0.splitId())).containsExactly("a", "b", "c");
        assertThat(f.values(s2.splitId())).containsExactly("x");
        NearstreamRecord c = f.records.get(s0.splitId()).get(2);
        assertThat(c.chunk()).isEqualTo(pos(1, 1, 100));
        assertThat(c.index()).isZero();
        // Event time comes from the chunk map, as pull mode takes it from the chunk header.
        assertThat(c.chunkTimestampMs()).isEqualTo(PushTestRegion.timestampOf(pos(1, 1, 100)));
        assertThat(f.records.get(s0.splitId()).get(1).index()).isEqualTo(1);
        assertThat(region.released(0)).isEqualTo(1);
        assertThat(reader.positions())
                .containsEntry(s0.splitId(), pos(1, 1, 200))
                .containsEntry(s2.splitId(), pos(1, 1, 100));
        assertThat(reader.slotsConsumed()).isEqualTo(1);
    }

    @Test
    void theSubscriptionCarriesTheSourcesRecordFilter() throws IOException {
        region = PushTestRegion.create(regionPath, EPOCH, SLOTS, SLOT_BYTES, 0);
        RecordFilter views = RecordFilter.jsonFieldIn("t", "view");
        PushSplitReader reader = newReader(0, views);
        NearstreamSplit s = split(0, Position.EARLIEST, 0, null);
        reader.handleSplitsChanges(new SplitsAddition<>(List.of(s)));
        // What the broker's push thread let through (this test's region pushes what it is told).
        region.publish(0, chunk(0, pos(1, 1, 0), "{\"t\":\"view\"}"));
        assertThat(fetchSome(reader).values(s.splitId())).containsExactly("{\"t\":\"view\"}");
        assertThat(clientOf(0).pushCalls())
                .singleElement()
                .asString()
                .startsWith("subscribe ")
                .endsWith(" filter " + views.toSpec());
    }

    @Test
    void aChunkNoneOfWhoseRecordsPassedStillMovesItsSplitOn() throws IOException {
        // Under a record filter a chunk's map entry counts the rows that passed, 0 when none did.
        region = PushTestRegion.create(regionPath, EPOCH, SLOTS, SLOT_BYTES, 0);
        PushSplitReader reader = newReader(0);
        NearstreamSplit s0 = split(0, Position.EARLIEST, 0, null);
        NearstreamSplit s2 = split(2, Position.EARLIEST, 0, null);
        reader.handleSplitsChanges(new SplitsAddition<>(List.of(s0, s2)));

        region.publish(
                0,
                chunk(0, pos(1, 1, 0)),
                chunk(2, pos(1, 1, 0)),
                chunk(0, pos(1, 1, 100), "a", "b"),
                chunk(0, pos(1, 1, 200)));
        Fetched f = fetchSome(reader);

        assertThat(f.values(s0.splitId())).containsExactly("a", "b");
        assertThat(f.values(s2.splitId())).isEmpty();
        NearstreamRecord b = f.records.get(s0.splitId()).get(1);
        assertThat(b.chunk()).isEqualTo(pos(1, 1, 100));
        assertThat(b.index()).isEqualTo(1);
        assertThat(reader.positions())
                .containsEntry(s0.splitId(), pos(1, 1, 300))
                .containsEntry(s2.splitId(), pos(1, 1, 100));
        assertThat(region.released(0)).isEqualTo(1);
    }

    @Test
    void aSlotWithoutRowsMovesItsSplitsOnAndGoesBackAtOnce() throws IOException {
        region = PushTestRegion.create(regionPath, EPOCH, SLOTS, SLOT_BYTES, 0);
        PushSplitReader reader = newReader(0);
        // Restored in the middle of chunk 1:1:0 (two of its passing records were emitted), whose
        // records, under the filter the job now has, all fail.
        NearstreamSplit s = split(0, pos(1, 1, 0), 2, null);
        reader.handleSplitsChanges(new SplitsAddition<>(List.of(s)));
        region.publish(0, chunk(0, pos(1, 1, 0)), chunk(0, pos(1, 1, 100)));
        for (int i = 0; i < 100 && reader.slotsConsumed() == 0; i++) {
            RecordsWithSplitIds<RecordRun> batch = reader.fetch();
            assertThat(batch).isNotInstanceOf(PushSlotRecords.class);
            assertThat(batch.nextSplit()).isNull();
            batch.recycle();
        }
        assertThat(reader.slotsConsumed()).isEqualTo(1);
        assertThat(region.released(0)).isEqualTo(1);
        assertThat(reader.positions()).containsEntry(s.splitId(), pos(1, 1, 200));

        // The records to skip belonged to that chunk: the next one is read from its first row.
        region.heartbeat();
        region.publish(0, chunk(0, pos(1, 1, 200), "n0", "n1"));
        Fetched f = fetchSome(reader);
        assertThat(f.values(s.splitId())).containsExactly("n0", "n1");
        assertThat(f.records.get(s.splitId()).get(0).index()).isZero();
    }

    @Test
    void anOffsetOutsideTheSlotIsRefusedNotRead() throws IOException {
        region = PushTestRegion.create(regionPath, EPOCH, SLOTS, SLOT_BYTES, 0);
        PushSplitReader reader = newReader(0);
        NearstreamSplit s0 = split(0, Position.EARLIEST, 0, null);
        reader.handleSplitsChanges(new SplitsAddition<>(List.of(s0)));
        // Row 1 claims to end 1 GiB into the slot: copying it would read far outside the mapping.
        region.publish(0, 2, 1 << 30, chunk(0, pos(1, 1, 0), "a", "b", "c"));

        PushSlotRecords batch = fetchSlot(reader);
        assertThat(batch.nextSplit()).isEqualTo(s0.splitId());
        RecordRun run = batch.nextRecordFromSplit();
        assertThat(new String(run.value(0), StandardCharsets.UTF_8)).isEqualTo("a");
        assertThatThrownBy(() -> run.value(1))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("outside the slot");
        assertThatThrownBy(() -> run.value(2))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("outside the slot");
        assertThatThrownBy(() -> run.value(3)).isInstanceOf(IndexOutOfBoundsException.class);
        batch.recycle();
        assertThat(region.released(0)).isEqualTo(1);
    }

    private static final String SEGMENT_PREFIX = "nearstream-seg-9-";
    private static final String IN_FILE = "a record that the broker left in its segment file";
    private static final String COPIED = "a record that the broker copied into the slot";

    /** Segment file 1 next to the region: 64 filler bytes, then {@link #IN_FILE}. */
    private byte[] writeSegmentFile() throws IOException {
        byte[] file = (".".repeat(64) + IN_FILE).getBytes(StandardCharsets.UTF_8);
        Files.write(dir.resolve(SEGMENT_PREFIX + 1), file);
        return file;
    }

    @Test
    void readsViewRowsInlineInTheSlotAndInASegmentFile() throws IOException {
        region = PushTestRegion.createView(regionPath, EPOCH, SLOTS, SLOT_BYTES, SEGMENT_PREFIX, 0);
        byte[] file = writeSegmentFile();
        PushSplitReader reader = newReader(0, RecordFilter.none(), SlotFormat.BINARY_VIEW);
        NearstreamSplit s = split(0, Position.EARLIEST, 0, null);
        reader.handleSplitsChanges(new SplitsAddition<>(List.of(s)));
        region.publishViews(
                0,
                file,
                -1,
                0,
                0,
                chunk(0, pos(1, 1, 0), "tiny", "twelve-bytes", IN_FILE),
                chunk(0, pos(1, 1, 100), COPIED, "", "thirteen-byte"));

        Fetched f = fetchSome(reader);

        assertThat(f.values(s.splitId()))
                .containsExactly("tiny", "twelve-bytes", IN_FILE, COPIED, "", "thirteen-byte");
        assertThat(f.records.get(s.splitId()).get(4).chunk()).isEqualTo(pos(1, 1, 100));
        assertThat(reader.positions()).containsEntry(s.splitId(), pos(1, 1, 200));
        assertThat(region.released(0)).isEqualTo(1);
        assertThat(clientOf(0).pushCalls())
                .singleElement()
                .asString()
                .endsWith(" format binary-view");
    }

    @Test
    void aViewOutsideItsBufferIsRefusedNotRead() throws IOException {
        region = PushTestRegion.createView(regionPath, EPOCH, SLOTS, SLOT_BYTES, SEGMENT_PREFIX, 0);
        byte[] file = writeSegmentFile();
        PushSplitReader reader = newReader(0, RecordFilter.none(), SlotFormat.BINARY_VIEW);
        NearstreamSplit s = split(0, Position.EARLIEST, 0, null);
        reader.handleSplitsChanges(new SplitsAddition<>(List.of(s)));
        // Row 1 names buffer 2, which the slot does not have (buffers 0 and 1).
        region.publishViews(0, file, 1, 2, 0, chunk(0, pos(1, 1, 0), "ok", IN_FILE));
        PushSlotRecords batch = fetchSlot(reader);
        batch.nextSplit();
        RecordRun run = batch.nextRecordFromSplit();
        assertThat(new String(run.value(0), StandardCharsets.UTF_8)).isEqualTo("ok");
        assertThatThrownBy(() -> run.value(1))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("slot 0: the view of row 1 names buffer 2 of 2");
        batch.recycle();

        // Row 0 ends one byte past the end of segment file 1.
        region.publishViews(
                0,
                file,
                0,
                1,
                file.length - IN_FILE.length() + 1,
                chunk(0, pos(1, 1, 100), IN_FILE));
        PushSlotRecords next = fetchSlot(reader);
        next.nextSplit();
        RecordRun bad = next.nextRecordFromSplit();
        assertThatThrownBy(() -> bad.value(0))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("slot 1: the view of row 0 has bytes")
                .hasMessageContaining("outside its buffer 1 of " + file.length + " bytes");
        next.recycle();
        assertThat(region.released(0)).isEqualTo(2);
    }

    @Test
    void resumesExactlySkippingChunksBeforeAndRecordsAlreadyEmitted() throws IOException {
        region = PushTestRegion.create(regionPath, EPOCH, SLOTS, SLOT_BYTES, 0);
        PushSplitReader reader = newReader(0);
        // Restored: chunk 1:1:100 had 2 records emitted.
        NearstreamSplit s = split(0, pos(1, 1, 100), 2, null);
        reader.handleSplitsChanges(new SplitsAddition<>(List.of(s)));

        region.publish(
                0,
                chunk(0, pos(1, 1, 0), "old"),
                chunk(0, pos(1, 1, 100), "d1", "d2", "n3"),
                chunk(0, pos(1, 2, 0), "n4"));
        assertThat(fetchSome(reader).values(s.splitId())).containsExactly("n3", "n4");
    }

    @Test
    void finishesABoundedSplitAtItsStoppingPosition() throws IOException {
        region = PushTestRegion.create(regionPath, EPOCH, SLOTS, SLOT_BYTES, 0);
        PushSplitReader reader = newReader(0);
        NearstreamSplit s = split(0, Position.EARLIEST, 0, pos(1, 1, 200));
        reader.handleSplitsChanges(new SplitsAddition<>(List.of(s)));

        region.publish(0, chunk(0, pos(1, 1, 0), "a"), chunk(0, pos(1, 1, 100), "b"));
        Fetched f = fetchSome(reader);
        assertThat(f.values(s.splitId())).containsExactly("a", "b");
        assertThat(f.finished).containsExactly(s.splitId());
        assertThat(reader.positions()).isEmpty();
    }

    @Test
    void twoReadersShareOneSubscriptionEachOnItsRing() throws IOException {
        region = PushTestRegion.create(regionPath, EPOCH, SLOTS, SLOT_BYTES, 0, 1);
        PushSplitReader r0 = newReader(0);
        PushSplitReader r1 = newReader(1);
        NearstreamSplit s0 = split(0, Position.EARLIEST, 0, null);
        NearstreamSplit s1 = split(1, Position.EARLIEST, 0, null);
        r0.handleSplitsChanges(new SplitsAddition<>(List.of(s0)));
        r1.handleSplitsChanges(new SplitsAddition<>(List.of(s1)));

        region.publish(0, chunk(0, pos(1, 1, 0), "zero"));
        region.publish(1, chunk(1, pos(1, 1, 0), "one"));
        assertThat(fetchSome(r0).values(s0.splitId())).containsExactly("zero");
        assertThat(fetchSome(r1).values(s1.splitId())).containsExactly("one");
    }

    @Test
    void anEmptyRingReturnsWithinABoundedWaitAndWakeUpReturnsAtOnce() throws IOException {
        region = PushTestRegion.create(regionPath, EPOCH, SLOTS, SLOT_BYTES, 0);
        PushSplitReader reader = newReader(0);
        reader.handleSplitsChanges(
                new SplitsAddition<>(List.of(split(0, Position.EARLIEST, 0, null))));
        fetch(reader); // attaches

        long start = System.nanoTime();
        assertThat(fetch(reader).records).isEmpty();
        assertThat(System.nanoTime() - start)
                .isLessThan(Duration.ofMillis(PushSplitReader.AWAIT_MS * 20).toNanos());

        reader.wakeUp();
        start = System.nanoTime();
        assertThat(fetch(reader).records).isEmpty();
        assertThat(System.nanoTime() - start)
                .isLessThan(Duration.ofMillis(PushSplitReader.AWAIT_MS).toNanos());
    }

    @Test
    void theRingIsHeartbeatedWhileTheFetcherIsBlocked() throws Exception {
        region = PushTestRegion.create(regionPath, EPOCH, SLOTS, SLOT_BYTES, 0);
        PushSplitReader reader = newReader(0); // consumer timeout 2 s: a heartbeat every 500 ms
        reader.handleSplitsChanges(
                new SplitsAddition<>(List.of(split(0, Position.EARLIEST, 0, null))));
        fetch(reader);
        long attached = region.consumerHeartbeat(0);

        Thread.sleep(1_200); // no fetch: as when Flink's element queue is full
        assertThat(region.consumerHeartbeat(0) - attached)
                .isGreaterThan(Duration.ofMillis(500).toNanos());
    }

    @Test
    void aStaleBrokerHeartbeatFailsTheFetch() throws IOException {
        region = PushTestRegion.create(regionPath, EPOCH, SLOTS, SLOT_BYTES, 0);
        PushSplitReader reader = newReader(0);
        reader.handleSplitsChanges(
                new SplitsAddition<>(List.of(split(0, Position.EARLIEST, 0, null))));
        fetch(reader);
        region.setHeartbeat(System.nanoTime() - Duration.ofSeconds(5).toNanos());
        assertThatThrownBy(() -> fetch(reader))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("heartbeat");
    }

    @Test
    void aChangedEpochFailsTheFetch() throws IOException {
        region = PushTestRegion.create(regionPath, EPOCH, SLOTS, SLOT_BYTES, 0);
        PushSplitReader reader = newReader(0);
        reader.handleSplitsChanges(
                new SplitsAddition<>(List.of(split(0, Position.EARLIEST, 0, null))));
        fetch(reader);
        region.setEpoch(EPOCH + 1);
        assertThatThrownBy(() -> fetch(reader))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("epoch");
    }

    @Test
    void aReclaimedRingFailsTheFetch() throws IOException {
        region = PushTestRegion.create(regionPath, EPOCH, SLOTS, SLOT_BYTES, 0);
        PushSplitReader reader = newReader(0);
        reader.handleSplitsChanges(
                new SplitsAddition<>(List.of(split(0, Position.EARLIEST, 0, null))));
        fetch(reader);
        region.reclaim(0);
        assertThatThrownBy(() -> fetch(reader))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("reclaimed");
    }

    @Test
    void closingTheLeaderKeepsTheSubscriptionForTheFollower() throws Exception {
        region = PushTestRegion.create(regionPath, EPOCH, SLOTS, SLOT_BYTES, 0, 1);
        PushSplitReader r0 = newReader(0);
        PushSplitReader r1 = newReader(1);
        NearstreamSplit s1 = split(1, Position.EARLIEST, 0, null);
        r0.handleSplitsChanges(new SplitsAddition<>(List.of(split(0, Position.EARLIEST, 0, null))));
        r1.handleSplitsChanges(new SplitsAddition<>(List.of(s1)));
        region.publish(1, chunk(1, pos(1, 1, 0), "one"));
        assertThat(fetchSome(r1).values(s1.splitId())).containsExactly("one");

        readers.remove(r0);
        r0.close();

        // The leader's connection carries the subscription: the group keeps it and only empties
        // the leader's ring; the follower reads on in the same region.
        FakeNearstreamClient client0 = clientOf(0);
        assertThat(client0.isClosed()).isFalse();
        assertThat(client0.openSubscriptions().values())
                .containsExactly(
                        List.of(
                                new PushRingSpec(0, List.of()),
                                new PushRingSpec(
                                        1, List.of(new PushSplitStart(1, pos(1, 1, 100))))));
        region.publish(1, chunk(1, pos(1, 1, 100), "two"));
        assertThat(fetchSome(r1).values(s1.splitId())).containsExactly("two");
        assertThat(clientOf(1).pushCalls()).isEmpty();
    }

    @Test
    void aReaderJoiningLaterMovesTheOthersToANewSubscriptionFromTheirPositions() throws Exception {
        region = PushTestRegion.create(regionPath, EPOCH, SLOTS, SLOT_BYTES, 0, 1);
        PushSplitReader r0 = newReader(0);
        PushSplitReader r1 = newReader(1);
        NearstreamSplit s1 = split(1, Position.EARLIEST, 0, null);
        r0.handleSplitsChanges(new SplitsAddition<>(List.of(split(0, Position.EARLIEST, 0, null))));
        r1.handleSplitsChanges(new SplitsAddition<>(List.of(s1)));
        region.publish(1, chunk(1, pos(1, 1, 0), "one"));
        assertThat(fetchSome(r1).values(s1.splitId())).containsExactly("one");

        // Subtask 2 gets a split only now: a new subscription with a ring for it.
        Path second = dir.resolve("region-2");
        PushTestRegion next = PushTestRegion.create(second, EPOCH, SLOTS, SLOT_BYTES, 0, 1, 2);
        clientOf(0).setPushRegion(second.toString(), EPOCH);
        PushSplitReader r2 = newReader(2);
        r2.handleSplitsChanges(new SplitsAddition<>(List.of(split(2, Position.EARLIEST, 0, null))));
        region.closeRegion();

        assertThat(clientOf(0).openSubscriptions().values())
                .containsExactly(
                        List.of(
                                new PushRingSpec(
                                        0, List.of(new PushSplitStart(0, Position.EARLIEST))),
                                new PushRingSpec(1, List.of(new PushSplitStart(1, pos(1, 1, 100)))),
                                new PushRingSpec(
                                        2, List.of(new PushSplitStart(2, Position.EARLIEST)))));
        // The broker re-pushes from the chunk boundary; a chunk already read would be skipped.
        next.publish(1, chunk(1, pos(1, 1, 0), "one"), chunk(1, pos(1, 1, 100), "two"));
        assertThat(fetchSome(r1).values(s1.splitId())).containsExactly("two");
    }

    /** Fetches until a batch that holds a slot comes (other batches are recycled). */
    private static PushSlotRecords fetchSlot(PushSplitReader reader) throws IOException {
        for (int i = 0; i < 100; i++) {
            RecordsWithSplitIds<RecordRun> batch = reader.fetch();
            if (batch instanceof PushSlotRecords slot) {
                return slot;
            }
            batch.recycle();
        }
        throw new AssertionError("no slot fetched");
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(10);
        }
    }

    @Test
    void aSlotGoesBackOnlyWhenItsBatchIsRecycledAndExactlyOnce() throws Exception {
        region = PushTestRegion.create(regionPath, EPOCH, SLOTS, SLOT_BYTES, 0);
        PushSplitReader reader = newReader(0);
        NearstreamSplit s = split(0, Position.EARLIEST, 0, null);
        reader.handleSplitsChanges(new SplitsAddition<>(List.of(s)));
        List<PushSlotRecords> held = new ArrayList<>();
        for (int i = 0; i < SLOTS; i++) {
            region.heartbeat();
            region.publish(0, chunk(0, pos(1, 1, 100 * i), "v" + i));
            held.add(fetchSlot(reader));
        }

        // Every batch still queued in Flink holds its slot: the ring is full for the broker.
        assertThat(region.released(0)).isZero();
        assertThat(region.nextSlotFree(0)).isFalse();
        assertThat(reader.slotViews().allocatedBytes()).isEqualTo((long) SLOTS * SLOT_BYTES);
        assertThat(reader.slotViews().openViews()).isEqualTo(SLOTS);
        region.heartbeat();

        assertThat(emit(held.get(0)).values(s.splitId())).containsExactly("v0");
        assertThat(region.released(0)).isEqualTo(1);
        assertThat(region.nextSlotFree(0)).isTrue();
        held.get(0).recycle(); // Flink recycles once; a second call must not release again
        assertThat(region.released(0)).isEqualTo(1);

        for (int i = 1; i < SLOTS; i++) {
            assertThat(emit(held.get(i)).values(s.splitId())).containsExactly("v" + i);
        }
        assertThat(region.released(0)).isEqualTo(SLOTS);
        assertThat(reader.slotViews().allocatedBytes()).isZero();

        // Views are reused: another round needs no new one.
        region.heartbeat(); // the test's "broker" heartbeats only when told
        region.publish(0, chunk(0, pos(1, 1, 100 * SLOTS), "again"));
        assertThat(fetchSome(reader).values(s.splitId())).containsExactly("again");
        assertThat(reader.slotViews().openViews()).isEqualTo(SLOTS);

        readers.remove(reader);
        reader.close();
        assertThat(reader.slotViews().openViews()).isZero();
        assertThat(reader.slotViews().allocatorClosed()).isTrue();
    }

    @Test
    void aSlotWithNothingToEmitGoesBackAtOnce() throws IOException {
        region = PushTestRegion.create(regionPath, EPOCH, SLOTS, SLOT_BYTES, 0);
        PushSplitReader reader = newReader(0);
        NearstreamSplit s = split(0, pos(1, 1, 100), 0, null);
        reader.handleSplitsChanges(new SplitsAddition<>(List.of(s)));
        region.publish(0, chunk(0, pos(1, 1, 0), "before"), chunk(5, pos(1, 1, 0), "not ours"));
        for (int i = 0; i < 100 && reader.slotsConsumed() == 0; i++) {
            RecordsWithSplitIds<RecordRun> batch = reader.fetch();
            assertThat(batch).isNotInstanceOf(PushSlotRecords.class);
            batch.recycle();
        }
        assertThat(reader.slotsConsumed()).isEqualTo(1);
        assertThat(region.released(0)).isEqualTo(1);
        assertThat(reader.slotViews().allocatedBytes()).isZero();
    }

    @Test
    void aBatchDroppedWithoutRecycleGivesItsSlotBackWhenCollected() throws Exception {
        region = PushTestRegion.create(regionPath, EPOCH, SLOTS, SLOT_BYTES, 0);
        PushSplitReader reader = newReader(0);
        reader.handleSplitsChanges(
                new SplitsAddition<>(List.of(split(0, Position.EARLIEST, 0, null))));
        region.publish(0, chunk(0, pos(1, 1, 0), "lost"));
        region.heartbeat();
        fetchSlotAndDropIt(reader); // as a cancelled task drops its queued batches

        await(
                "the cleaner to release the slot",
                () -> {
                    System.gc();
                    return region.released(0) == 1;
                });
        assertThat(reader.slotViews().allocatedBytes()).isZero();
        readers.remove(reader);
        reader.close();
        assertThat(reader.slotViews().allocatorClosed()).isTrue();
    }

    private static void fetchSlotAndDropIt(PushSplitReader reader) throws IOException {
        assertThat(fetchSlot(reader)).isNotNull();
    }

    @Test
    void closingWithABatchStillQueuedKeepsItReadableUntilItIsRecycled() throws Exception {
        region = PushTestRegion.create(regionPath, EPOCH, SLOTS, SLOT_BYTES, 0);
        PushSplitReader reader = newReader(0);
        NearstreamSplit s = split(0, Position.EARLIEST, 0, null);
        reader.handleSplitsChanges(new SplitsAddition<>(List.of(s)));
        region.publish(0, chunk(0, pos(1, 1, 0), "still", "here"));
        region.heartbeat();
        PushSlotRecords queued = fetchSlot(reader);

        // Flink closes an idle fetcher's reader on the fetcher thread while the task emits.
        readers.remove(reader);
        reader.close();
        assertThat(reader.slotViews().allocatorClosed()).isFalse();
        assertThat(region.released(0)).isZero();

        assertThat(emit(queued).values(s.splitId())).containsExactly("still", "here");
        assertThat(region.released(0)).isEqualTo(1);
        assertThat(reader.slotViews().openViews()).isZero();
        assertThat(reader.slotViews().allocatorClosed()).isTrue();
    }

    @Test
    void pendingMetricsFollowTheTailsAskedInTheBackground() throws Exception {
        region = PushTestRegion.create(regionPath, EPOCH, SLOTS, SLOT_BYTES, 0);
        PushSplitReader reader = newReader(0);
        FakeNearstreamClient client = clientOf(0);
        NearstreamSourceReaderMetrics m = metrics.get(0);
        client.createStream(STREAM, 1, 1 << 20);
        Position first = client.appendRecords(STREAM, 0, 1, "aa", "bb");
        Position second = client.appendRecords(STREAM, 0, 1, "cc", "dd");
        Position tail = client.tail(STREAM, 0);
        assertThat(tail.segment()).isEqualTo(first.segment());
        NearstreamSplit s = split(0, first, 0, null);
        reader.handleSplitsChanges(new SplitsAddition<>(List.of(s)));

        long all = tail.offset() - first.offset();
        await("pending bytes of the whole streamlet", () -> m.pendingBytes() == all);

        int chunkBytes = second.offset() - first.offset();
        region.publish(
                0,
                new Chunk(
                        0,
                        first,
                        chunkBytes,
                        List.of(
                                "aa".getBytes(StandardCharsets.UTF_8),
                                "bb".getBytes(StandardCharsets.UTF_8))));
        region.heartbeat();
        assertThat(fetchSome(reader).values(s.splitId())).containsExactly("aa", "bb");

        // One chunk of the same size left: its bytes, and 2 records at the bytes/record seen.
        long rest = tail.offset() - second.offset();
        await("pending bytes after one chunk", () -> m.pendingBytes() == rest);
        assertThat(m.pendingRecords()).isEqualTo(2);
        int asked = client.metadataCount();
        await("another tail refresh", () -> client.metadataCount() > asked);
    }

    @Test
    void aPausedSplitLeavesTheSubscriptionAndResumesFromItsPositionWithoutDuplicates()
            throws IOException {
        region = PushTestRegion.create(regionPath, EPOCH, SLOTS, SLOT_BYTES, 0);
        PushSplitReader reader = newReader(0);
        FakeNearstreamClient client = clientOf(0);
        NearstreamSplit s0 = split(0, Position.EARLIEST, 0, null);
        NearstreamSplit s1 = split(1, Position.EARLIEST, 0, null);
        reader.handleSplitsChanges(new SplitsAddition<>(List.of(s0, s1)));
        region.publish(0, chunk(0, pos(1, 1, 0), "a0"), chunk(1, pos(1, 1, 0), "b0"));
        region.heartbeat();
        Fetched f = fetchSome(reader);
        assertThat(f.values(s0.splitId())).containsExactly("a0");
        assertThat(f.values(s1.splitId())).containsExactly("b0");

        reader.pauseOrResumeSplits(List.of(s1), List.of());
        assertThat(client.openSubscriptions().values())
                .containsExactly(
                        List.of(
                                new PushRingSpec(
                                        0, List.of(new PushSplitStart(0, pos(1, 1, 100))))));

        // Pushed before the broker applied the update: dropped, the split does not advance.
        region.publish(0, chunk(1, pos(1, 1, 100), "b1"), chunk(0, pos(1, 1, 100), "a1"));
        region.heartbeat();
        f = fetchSome(reader);
        assertThat(f.values(s0.splitId())).containsExactly("a1");
        assertThat(f.records).doesNotContainKey(s1.splitId());
        assertThat(reader.positions()).containsEntry(s1.splitId(), pos(1, 1, 100));

        reader.pauseOrResumeSplits(List.of(), List.of(s1));
        List<PushRingSpec> rings = client.openSubscriptions().values().iterator().next();
        assertThat(rings).hasSize(1);
        assertThat(rings.get(0).splits())
                .containsExactlyInAnyOrder(
                        new PushSplitStart(0, pos(1, 1, 200)),
                        new PushSplitStart(1, pos(1, 1, 100)));

        // The broker pushes the resumed split from its position; an older chunk is skipped.
        region.publish(
                0,
                chunk(1, pos(1, 1, 0), "b0"),
                chunk(1, pos(1, 1, 100), "b1"),
                chunk(1, pos(1, 1, 200), "b2"));
        region.heartbeat();
        assertThat(fetchSome(reader).values(s1.splitId())).containsExactly("b1", "b2");
    }

    private final Map<Integer, FakeNearstreamClient> clients = new LinkedHashMap<>();
    private final Map<Integer, NearstreamSourceReaderMetrics> metrics = new LinkedHashMap<>();

    private FakeNearstreamClient clientOf(int subtask) {
        return clients.get(subtask);
    }
}
