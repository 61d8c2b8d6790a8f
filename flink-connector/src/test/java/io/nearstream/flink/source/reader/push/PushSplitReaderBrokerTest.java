package io.nearstream.flink.source.reader.push;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.Durability;
import io.nearstream.client.NettyNearstreamClient;
import io.nearstream.client.Position;
import io.nearstream.client.StreamConfig;
import io.nearstream.flink.source.NearstreamException;
import io.nearstream.flink.source.NearstreamSourceOptions;
import io.nearstream.flink.source.metrics.NearstreamSourceReaderMetrics;
import io.nearstream.flink.source.reader.RecordRun;
import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry.Key;
import io.nearstream.flink.source.split.NearstreamSplit;
import io.nearstream.flink.source.testutils.NearstreamTestData;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsAddition;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The push split reader against the real broker: pause/resume (watermark alignment) through
 * PushUpdate, slots handed back on recycle, pending metrics from the broker's tails.
 */
class PushSplitReaderBrokerTest {

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    private static final int CHUNKS = 500;
    private static final int PER_CHUNK = 10;

    private PushSplitReader reader;
    private NearstreamSourceReaderMetrics metrics;
    private final Map<String, List<String>> emitted = new HashMap<>();

    @AfterEach
    void tearDown() throws Exception {
        if (reader != null) {
            reader.close();
        }
    }

    private List<NearstreamSplit> setUp(String stream) {
        BROKER.createStream(stream, 2);
        List<NearstreamSplit> splits = new ArrayList<>();
        for (int s = 0; s < 2; s++) {
            List<Position> chunks =
                    NearstreamTestData.append(
                            BROKER.client(), stream, s, records(s), PER_CHUNK, 1_000);
            splits.add(new NearstreamSplit(stream, s, chunks.get(0), 0, null));
        }
        startReader(stream, splits, 4);
        return splits;
    }

    private void startReader(String stream, List<NearstreamSplit> splits, int slotsPerRing) {
        Configuration config = new Configuration();
        config.set(NearstreamSourceOptions.PUSH_SLOTS_PER_RING, slotsPerRing);
        // The broker's smallest slot: with 100-byte records each streamlet fills about 8 slots.
        config.set(NearstreamSourceOptions.PUSH_SLOT_BYTES, 64 * 1024);
        config.set(NearstreamSourceOptions.PUSH_PENDING_REFRESH_INTERVAL, Duration.ofMillis(50));
        metrics =
                new NearstreamSourceReaderMetrics(
                        UnregisteredMetricsGroup.createSourceReaderMetricGroup());
        reader =
                new PushSplitReader(
                        NettyNearstreamClient.connect(BROKER.address()),
                        stream,
                        config,
                        metrics,
                        new PushSubscriptionRegistry(),
                        new PushElection(0, event -> {}),
                        new Key(BROKER.address(), stream, "test"),
                        0);
        reader.handleSplitsChanges(new SplitsAddition<>(splits));
    }

    private static List<String> records(int streamlet) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < CHUNKS * PER_CHUNK; i++) {
            StringBuilder r = new StringBuilder(streamlet + "-" + i + "-");
            while (r.length() < 100) {
                r.append('x');
            }
            out.add(r.toString());
        }
        return out;
    }

    private List<String> emitted(NearstreamSplit split) {
        return emitted.getOrDefault(split.splitId(), List.of());
    }

    /** Fetches and emits until {@code done}, recycling each batch as Flink does. */
    private void readUntil(String what, BooleanSupplier done) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out reading " + what + ": " + counts());
            }
            RecordsWithSplitIds<RecordRun> batch = reader.fetch();
            String splitId;
            while ((splitId = batch.nextSplit()) != null) {
                RecordRun run;
                while ((run = batch.nextRecordFromSplit()) != null) {
                    for (int i = 0; i < run.size(); i++) {
                        emitted.computeIfAbsent(splitId, k -> new ArrayList<>())
                                .add(new String(run.value(i), StandardCharsets.UTF_8));
                    }
                }
            }
            batch.recycle();
        }
    }

    private Map<String, Integer> counts() {
        Map<String, Integer> out = new HashMap<>();
        emitted.forEach((k, v) -> out.put(k, v.size()));
        return out;
    }

    @Test
    void aPausedSplitIsNotEmittedAndResumesWithoutLossOrDuplicates() throws Exception {
        List<NearstreamSplit> splits = setUp("pause");
        NearstreamSplit s0 = splits.get(0);
        NearstreamSplit s1 = splits.get(1);
        int all = CHUNKS * PER_CHUNK;

        readUntil("some of split 1", () -> emitted(s1).size() >= PER_CHUNK);
        reader.pauseOrResumeSplits(List.of(s1), List.of());
        int atPause = emitted(s1).size();
        readUntil("all of split 0", () -> emitted(s0).size() >= all);
        assertThat(emitted(s1)).hasSize(atPause); // nothing of the paused split came through
        assertThat(atPause).isLessThan(all);

        reader.pauseOrResumeSplits(List.of(), List.of(s1));
        readUntil("all of split 1", () -> emitted(s1).size() >= all);
        assertThat(emitted(s0)).isEqualTo(records(0));
        assertThat(emitted(s1)).isEqualTo(records(1));
        assertThat(reader.slotViews().allocatedBytes()).isZero();
    }

    @Test
    void pendingBytesComeFromTheBrokersTailsAndReachZeroOnceEverythingIsRead() throws Exception {
        List<NearstreamSplit> splits = setUp("pending");
        int all = CHUNKS * PER_CHUNK;
        // Nothing read yet: the whole of both streamlets is pending.
        awaitMetric("pending bytes before reading", () -> metrics.pendingBytes() > 0);
        readUntil(
                "all records",
                () -> emitted(splits.get(0)).size() >= all && emitted(splits.get(1)).size() >= all);
        awaitMetric("no pending bytes", () -> metrics.pendingBytes() == 0);
        assertThat(metrics.pendingRecords()).isZero();
    }

    /**
     * A reader that holds its slots (a backpressured task) while retention removes the position its
     * split continues from: once it reads again it gets the slots it had, then fails with
     * POSITION_OUT_OF_RANGE as a pull fetch would - never waits forever on a split the broker can
     * no longer push.
     */
    @Test
    void aSplitLeftBehindByRetentionFailsWithPositionOutOfRange() throws Exception {
        String stream = "behind";
        // 64 KiB segments, 256 KiB kept: what the reader does not take within 4 segments is gone.
        BROKER.createStream(
                new StreamConfig(stream, 1, 64 * 1024, 0, 0, Durability.NONE, 256 * 1024, -1));
        List<Position> chunks =
                NearstreamTestData.append(
                        BROKER.client(), stream, 0, records(0).subList(0, 1_000), PER_CHUNK, 1_000);
        NearstreamSplit split = new NearstreamSplit(stream, 0, chunks.get(0), 0, null);
        startReader(stream, List.of(split), 2);

        // Take the first slot and keep it: the broker fills the other one, then the ring is full.
        RecordsWithSplitIds<RecordRun> held = reader.fetch();
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (held.nextSplit() == null) {
            assertThat(System.nanoTime()).isLessThan(deadline);
            held.recycle();
            held = reader.fetch();
        }
        // 2 MB more: retention drops the segments after the two slots' worth the ring holds.
        for (int round = 0; round < 4; round++) {
            NearstreamTestData.append(BROKER.client(), stream, 0, records(0), PER_CHUNK, 1_000);
        }
        Position kept = BROKER.client().metadata(stream).join().get(0).head();
        assertThat(kept.compareTo(chunks.get(chunks.size() - 1))).isPositive();
        held.recycle();

        assertThatThrownBy(() -> readUntil("a failure", () -> false))
                .isInstanceOf(NearstreamException.class)
                .hasMessageContaining("POSITION_OUT_OF_RANGE")
                .hasMessageContaining("fell behind retention");
    }

    private static void awaitMetric(String what, BooleanSupplier condition) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(10);
        }
    }
}
