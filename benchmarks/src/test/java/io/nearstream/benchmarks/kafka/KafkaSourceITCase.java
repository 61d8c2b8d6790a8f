package io.nearstream.benchmarks.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.benchmarks.jobs.CountWorkload;
import io.nearstream.benchmarks.jobs.FilterWorkload;
import io.nearstream.benchmarks.jobs.JobMeasurement;
import io.nearstream.benchmarks.jobs.JobOptions;
import io.nearstream.benchmarks.jobs.JobRunner;
import io.nearstream.benchmarks.jobs.LocalFlinkCluster;
import io.nearstream.benchmarks.jobs.SourceMode;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Optional;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The Kafka baseline end to end: a real Kafka started by {@link KafkaBroker}, records written by
 * {@link KafkaProducerPerf}'s producers, read back by a bounded Flink job over {@link KafkaSources}
 * on a MiniCluster.
 */
class KafkaSourceITCase {

    private static final String TOPIC = "it";
    private static final int PARTITIONS = 4;
    private static final int RECORDS = 10_000;
    private static final int RECORD_BYTES = 100;

    @RegisterExtension
    static final MiniClusterExtension FLINK =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    @Test
    void boundedJobReadsEveryProducedRecordOnceAndCloseLeavesNothingBehind() throws Exception {
        long pid;
        Path directory;
        try (KafkaBroker kafka = KafkaBroker.start()) {
            pid = kafka.pid();
            directory = kafka.directory();
            assertThat(kafka.version()).startsWith("4.");
            kafka.createTopic(TOPIC, PARTITIONS);

            ByteArrayOutputStream output = new ByteArrayOutputStream();
            KafkaPerfResult produced =
                    KafkaProducerPerf.run(
                            KafkaPerfOptions.exactly(
                                    kafka.bootstrapServers(),
                                    TOPIC,
                                    2,
                                    PARTITIONS,
                                    RECORDS,
                                    RECORD_BYTES,
                                    16 * 1024),
                            new PrintStream(output, true, StandardCharsets.UTF_8));
            assertThat(produced.produced()).isEqualTo(RECORDS);
            // The last line of the tool's output is its JSON result, for runners to parse.
            String[] lines = output.toString(StandardCharsets.UTF_8).trim().split("\n");
            assertThat(lines[lines.length - 1])
                    .startsWith("{\"tool\":\"kafka-producer-perf\"")
                    .contains("\"partitions\":4,\"producers\":2,\"record_bytes\":100")
                    .contains("\"produced\":" + RECORDS + ",")
                    .endsWith("}");
            assertThat(kafka.endOffsets(TOPIC).values().stream().mapToLong(Long::longValue).sum())
                    .isEqualTo(RECORDS);
            // Both producers wrote: every partition got records.
            assertThat(kafka.endOffsets(TOPIC).values()).allMatch(end -> end > 0);

            List<byte[]> values = readBounded(kafka.bootstrapServers(), 2);

            assertThat(values).hasSize(RECORDS);
            byte[] template = IndexedRecords.template(RECORD_BYTES);
            BitSet seen = new BitSet(RECORDS);
            for (byte[] value : values) {
                long index = IndexedRecords.index(value);
                assertThat(index).isBetween(0L, (long) RECORDS - 1);
                assertThat(IndexedRecords.matches(value, index, template))
                        .as("content of record %d", index)
                        .isTrue();
                assertThat(seen.get((int) index)).as("record %d read twice", index).isFalse();
                seen.set((int) index);
            }
            assertThat(seen.cardinality()).isEqualTo(RECORDS);

            // The benchmark harness's kafka mode reads the same topic through the same source.
            try (LocalFlinkCluster cluster = LocalFlinkCluster.start(2)) {
                JobMeasurement m =
                        JobRunner.run(
                                new JobOptions(
                                        CountWorkload.NAME,
                                        SourceMode.KAFKA,
                                        kafka.bootstrapServers(),
                                        TOPIC,
                                        2,
                                        RECORDS,
                                        JobOptions.DEFAULT_FETCH_BYTES,
                                        JobOptions.DEFAULT_PUSH_SLOTS,
                                        JobOptions.DEFAULT_PUSH_SLOT_BYTES,
                                        FilterWorkload.DEFAULT_PATTERN),
                                cluster,
                                null);
                assertThat(m.mode()).isEqualTo(SourceMode.KAFKA);
                assertThat(m.records()).isEqualTo(RECORDS);
                assertThat(m.result().valueBytes()).isEqualTo((long) RECORDS * RECORD_BYTES);
            }
        }

        Optional<ProcessHandle> server = ProcessHandle.of(pid);
        assertThat(server.isEmpty() || !server.get().isAlive())
                .as("Kafka process %d is gone", pid)
                .isTrue();
        assertThat(ProcessHandle.current().children().filter(ProcessHandle::isAlive))
                .as("no child process of this JVM left running")
                .noneMatch(child -> child.info().commandLine().orElse("").contains("kafka."));
        assertThat(Files.exists(directory)).as("%s deleted", directory).isFalse();
    }

    private static List<byte[]> readBounded(String bootstrapServers, int parallelism)
            throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(parallelism);
        List<byte[]> out = new ArrayList<>();
        try (CloseableIterator<byte[]> it =
                env.fromSource(
                                KafkaSources.bounded(bootstrapServers, TOPIC),
                                WatermarkStrategy.noWatermarks(),
                                "kafka")
                        .executeAndCollect()) {
            it.forEachRemaining(out::add);
        }
        return out;
    }
}
