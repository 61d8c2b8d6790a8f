package io.nearstream.flink.source;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.Durability;
import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NearstreamClusterClient;
import io.nearstream.client.StreamConfig;
import io.nearstream.flink.sink.NearstreamSink;
import io.nearstream.flink.sink.testutils.FailOnceMap;
import io.nearstream.flink.sink.testutils.SinkJobs;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import io.nearstream.testing.NearstreamClusterExtension;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.util.RestartStrategyUtils;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A streamlet moved to another broker while one Flink job writes the stream and another reads it
 * (docs/cluster.md, "Moving and draining"), with ZooKeeper and three real brokers: the writer's
 * appends to the sealed streamlet are retried and go to the new owner, the reader's fetches follow
 * NOT_OWNER to the same positions there, and the reader gets every record exactly once, without
 * either job failing. An exactly-once writer's open transactions hold chunks of the streamlet: the
 * move waits until the one of each writer is committed at its checkpoint (no new transaction starts
 * a part in the streamlet meanwhile), and the next transactions write it on its new owner.
 */
class NearstreamClusterMoveITCase {

    private static final int RECORDS = 200_000;
    private static final int STREAMLETS = 6;

    @RegisterExtension
    static final NearstreamClusterExtension CLUSTER =
            new NearstreamClusterExtension(List.of("host-a", "host-a", "host-a"));

    @RegisterExtension
    static final MiniClusterExtension FLINK =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(4)
                            .build());

    @ParameterizedTest
    @EnumSource(
            value = DeliveryGuarantee.class,
            names = {"AT_LEAST_ONCE", "EXACTLY_ONCE"})
    void aStreamletMovedUnderAWritingAndAReadingJobKeepsEveryRecordExactlyOnce(
            DeliveryGuarantee guarantee) throws Exception {
        String stream = "moving-" + guarantee.name().toLowerCase(java.util.Locale.ROOT);
        List<Integer> owners;
        try (NearstreamClient client = NearstreamClient.connect(CLUSTER.bootstrap())) {
            client.createStream(
                            new StreamConfig(
                                    stream, STREAMLETS, 64 * 1024, 4, 1, Durability.ASYNC, -1, -1))
                    .get(30, TimeUnit.SECONDS);
            owners =
                    client.clusterMetadata(stream)
                            .get(30, TimeUnit.SECONDS)
                            .placement(stream)
                            .orElseThrow()
                            .owners();
        }

        // The reader: pull, unbounded, from the earliest record; collected as it reads.
        StreamExecutionEnvironment readEnv = StreamExecutionEnvironment.getExecutionEnvironment();
        readEnv.setParallelism(2);
        RestartStrategyUtils.configureNoRestartStrategy(readEnv);
        CloseableIterator<String> reader =
                readEnv.fromSource(
                                NearstreamSource.<String>builder()
                                        .setBrokers(CLUSTER.bootstrap())
                                        .setStream(stream)
                                        .setReadMode(ReadMode.PULL)
                                        .setDeserializer(
                                                NearstreamRecordDeserializationSchema.utf8())
                                        .setFetchMaxWaitMs(100)
                                        .build(),
                                WatermarkStrategy.noWatermarks(),
                                "reader")
                        .executeAndCollect("reader");
        Map<String, Integer> counts = new ConcurrentHashMap<>();
        CompletableFuture<Void> reading =
                CompletableFuture.runAsync(
                        () -> {
                            int read = 0;
                            while (read < RECORDS && reader.hasNext()) {
                                counts.merge(reader.next(), 1, Integer::sum);
                                read++;
                            }
                        });

        // The writer: at least once (retries deduplicated by the producer's sequences) or
        // exactly once (a transaction per checkpoint), slowed by FailOnceMap so that it is still
        // writing when the streamlet moves; no restarts, so a failure of the writer fails the
        // test.
        StreamExecutionEnvironment writeEnv = StreamExecutionEnvironment.getExecutionEnvironment();
        writeEnv.setParallelism(2);
        RestartStrategyUtils.configureNoRestartStrategy(writeEnv);
        if (guarantee == DeliveryGuarantee.EXACTLY_ONCE) {
            writeEnv.enableCheckpointing(500);
        }
        FailOnceMap.reset(-1);
        NearstreamSink<String> sink =
                SinkJobs.sink(
                        CLUSTER.bootstrap(),
                        stream,
                        guarantee,
                        guarantee == DeliveryGuarantee.EXACTLY_ONCE ? stream : null);
        writeEnv.fromSequence(0, RECORDS - 1)
                .map(new FailOnceMap())
                .map(new Throttle())
                .sinkTo(sink);
        JobClient writer = writeEnv.executeAsync("writer");

        // Once both run and records flow: move streamlet 0 to the next broker.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (counts.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        assertThat(writer.getJobStatus().get(10, TimeUnit.SECONDS))
                .as("the writer still writes when the streamlet moves")
                .isEqualTo(JobStatus.RUNNING);
        int from = owners.get(0);
        int to = from % 3 + 1;
        try (NearstreamClusterClient client =
                NearstreamClusterClient.connect(CLUSTER.bootstrap())) {
            client.moveStreamlet(stream, 0, to).get(60, TimeUnit.SECONDS);
            assertThat(
                            client.clusterMetadata(stream)
                                    .get(30, TimeUnit.SECONDS)
                                    .placement(stream)
                                    .orElseThrow()
                                    .owners()
                                    .get(0))
                    .isEqualTo(to);
        }

        writer.getJobExecutionResult().get(120, TimeUnit.SECONDS);
        reading.get(120, TimeUnit.SECONDS);
        reader.close();

        assertThat(counts).hasSize(RECORDS);
        assertThat(counts.values()).as("records read more than once").allMatch(n -> n == 1);
        for (long i = 0; i < RECORDS; i += 9_973) {
            assertThat(counts).containsKey(Long.toString(i));
        }
    }

    /**
     * Slows the writer further (a millisecond every 20 records), so that an exactly-once writer,
     * whose records are read only once their checkpoint committed them, still writes when the move
     * starts.
     */
    private static final class Throttle implements MapFunction<String, String> {
        private int records;

        @Override
        public String map(String value) throws InterruptedException {
            if (++records % 20 == 0) {
                Thread.sleep(1);
            }
            return value;
        }
    }
}
