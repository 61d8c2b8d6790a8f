package io.nearstream.flink.source.reader;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.NettyNearstreamClient;
import io.nearstream.client.Position;
import io.nearstream.flink.source.NearstreamSourceOptions;
import io.nearstream.flink.source.metrics.NearstreamSourceReaderMetrics;
import io.nearstream.flink.source.reader.PushSubscriptionRegistry.Key;
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
        Configuration config = new Configuration();
        config.set(NearstreamSourceOptions.PUSH_SLOTS_PER_RING, 4);
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
                        new Key(BROKER.address(), stream, "test"),
                        0);
        reader.handleSplitsChanges(new SplitsAddition<>(splits));
        return splits;
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
