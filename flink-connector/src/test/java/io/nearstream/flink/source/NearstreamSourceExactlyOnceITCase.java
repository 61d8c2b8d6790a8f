package io.nearstream.flink.source;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.Durability;
import io.nearstream.client.StreamConfig;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import io.nearstream.flink.source.testutils.NearstreamTestData;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.util.RestartStrategyUtils;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A checkpointed job counts 100 000 known records of 4 streamlets while a task fails once in the
 * middle, after a checkpoint completed; it restarts from that checkpoint (chunk positions and
 * records already emitted from those chunks) and every record is counted exactly once.
 */
class NearstreamSourceExactlyOnceITCase {

    private static final int STREAMLETS = 4;
    private static final int PER_STREAMLET = 25_000;
    private static final int FAIL_AFTER = 20_000;

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    @RegisterExtension
    static final MiniClusterExtension FLINK =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    @Test
    void everyRecordIsCountedOnceDespiteAFailureInTheMiddle() throws Exception {
        String stream = "exactly-once";
        // Small segments and groups: the checkpointed positions sit in many of them.
        BROKER.createStream(
                new StreamConfig(stream, STREAMLETS, 64 * 1024, 4, 1, Durability.NONE, -1, -1));
        for (int s = 0; s < STREAMLETS; s++) {
            List<String> records = new ArrayList<>(PER_STREAMLET);
            for (int i = 0; i < PER_STREAMLET; i++) {
                records.add(s + "-" + i);
            }
            // 73 records per chunk: checkpoints fall inside chunks.
            NearstreamTestData.append(BROKER.client(), stream, s, records, 73, 1_000L * s);
        }

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        env.enableCheckpointing(100, CheckpointingMode.EXACTLY_ONCE);
        RestartStrategyUtils.configureFixedDelayRestartStrategy(env, 1, 100L);
        FailingMap.reset();

        NearstreamSource<String> source =
                NearstreamSource.<String>builder()
                        .setBrokers(BROKER.address())
                        .setStream(stream)
                        .setDeserializer(NearstreamRecordDeserializationSchema.utf8())
                        .setBounded(NearstreamStoppingPositions.latest())
                        .setFetchMaxBytesPerStreamlet(16 * 1024)
                        .build();

        Map<String, Integer> counts = new HashMap<>();
        try (CloseableIterator<String> it =
                env.fromSource(source, WatermarkStrategy.noWatermarks(), "nearstream")
                        .map(new FailingMap())
                        .executeAndCollect()) {
            it.forEachRemaining(v -> counts.merge(v, 1, Integer::sum));
        }

        assertThat(FailingMap.FAILED).as("the failure was injected").isTrue();
        assertThat(FailingMap.SEEN_BEFORE_FAILURE.get())
                .as("records seen before the failure")
                .isBetween(FAIL_AFTER / 2, STREAMLETS * PER_STREAMLET - 1);
        List<String> duplicated =
                counts.entrySet().stream()
                        .filter(e -> e.getValue() > 1)
                        .map(e -> e.getKey() + " x" + e.getValue())
                        .sorted()
                        .toList();
        assertThat(duplicated).as("records counted more than once").isEmpty();
        List<String> missing = new ArrayList<>();
        for (int s = 0; s < STREAMLETS; s++) {
            for (int i = 0; i < PER_STREAMLET; i++) {
                if (!counts.containsKey(s + "-" + i)) {
                    missing.add(s + "-" + i);
                }
            }
        }
        assertThat(missing).as("records never counted").isEmpty();
        assertThat(counts).hasSize(STREAMLETS * PER_STREAMLET);
    }

    /**
     * Passes records through, slowly until it fails once: after {@link #FAIL_AFTER} records and at
     * least one completed checkpoint, so the job resumes from a checkpoint, not the start.
     */
    private static final class FailingMap extends RichMapFunction<String, String>
            implements CheckpointListener {

        static volatile boolean FAILED;
        static final AtomicInteger SEEN_BEFORE_FAILURE = new AtomicInteger();
        private static final AtomicBoolean CHECKPOINT_COMPLETED = new AtomicBoolean();

        static void reset() {
            FAILED = false;
            SEEN_BEFORE_FAILURE.set(0);
            CHECKPOINT_COMPLETED.set(false);
        }

        @Override
        public String map(String value) throws Exception {
            if (!FAILED) {
                int seen = SEEN_BEFORE_FAILURE.incrementAndGet();
                if (seen >= FAIL_AFTER && CHECKPOINT_COMPLETED.get()) {
                    FAILED = true;
                    throw new RuntimeException("injected failure after " + seen + " records");
                }
                if (seen % 200 == 0) {
                    Thread.sleep(2); // let checkpoints complete while records flow
                }
            }
            return value;
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            CHECKPOINT_COMPLETED.set(true);
        }
    }
}
