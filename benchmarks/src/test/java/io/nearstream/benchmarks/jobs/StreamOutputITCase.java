package io.nearstream.benchmarks.jobs;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.benchmarks.workloads.CampaignWindowCount;
import io.nearstream.benchmarks.workloads.CorpusProducer;
import io.nearstream.benchmarks.workloads.ReferenceWordCount;
import io.nearstream.benchmarks.workloads.ResultRecords;
import io.nearstream.benchmarks.workloads.TextRecords;
import io.nearstream.benchmarks.workloads.WordCountFiles;
import io.nearstream.benchmarks.workloads.WordCountPipeline;
import io.nearstream.benchmarks.workloads.YsbReference;
import io.nearstream.benchmarks.workloads.YsbSummary;
import io.nearstream.client.NearstreamProducer;
import io.nearstream.client.NearstreamProducerConfig;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.util.RestartStrategyUtils;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The workloads' results written to a Nearstream stream by the connector's sink ({@code
 * --output-stream}, {@link StreamOutput}), against the real {@code nearstreamd} and read back with
 * a plain pull consumer:
 *
 * <ul>
 *   <li>YSB with the exactly-once sink, 300 ms checkpoints and a task failure injected after the
 *       first completed checkpoint, right after window results went into the open transaction:
 *       every (campaign, window) count appears exactly once and equals the count made from the
 *       generated events, and none of the results written before the failure is visible (the replay
 *       emits them again with a later emission time);
 *   <li>word count as {@link JobRunner} runs it, at least once: every word's final count is there;
 *       the windowed word count to the stream beside its files: the same window counts in both.
 * </ul>
 */
class StreamOutputITCase {

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    private static final long START_MS = 1_700_000_000_000L; // a multiple of 10 s
    private static final int YSB_EVENTS = 20_000;
    private static final long SPACING_MS = 10; // 20 000 events over 200 s: 20 windows
    private static final int YSB_STREAMLETS = 2;

    private static LocalFlinkCluster cluster;

    @TempDir static Path tmp;

    @BeforeAll
    static void startFlink() throws Exception {
        cluster = LocalFlinkCluster.start(2);
    }

    @AfterAll
    static void stopFlink() throws Exception {
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void ysbExactlyOnceOutputHoldsEveryWindowCountOnceDespiteATaskFailure() throws Exception {
        Path table = tmp.resolve("ysb-campaigns.csv");
        YsbReference reference =
                YsbReference.withTable(table, 21, YSB_EVENTS, START_MS, SPACING_MS);
        // Each streamlet in event-time order and read by a source subtask of its own (streamlet
        // mod parallelism): watermarks never pass an event still to come, so no view is late.
        BROKER.createStream("ysb-in", YSB_STREAMLETS);
        try (NearstreamProducer producer =
                new NearstreamProducer(
                        NearstreamProducerConfig.builder(BROKER.client(), "ysb-in").build())) {
            for (int i = 0; i < reference.events.size(); i++) {
                producer.sendTo(i % YSB_STREAMLETS, reference.events.get(i), (pos, error) -> {});
            }
            producer.flush();
        }
        Map<String, Long> before = BROKER.client().stats().get(30, TimeUnit.SECONDS);

        JobOptions options =
                options(
                        YsbWorkload.NAME,
                        "ysb-in",
                        YSB_EVENTS,
                        Map.of(
                                "ysb-campaigns", table.toString(),
                                "output-stream", "ysb-out",
                                "output-streamlets", "2",
                                "output-guarantee", "exactly-once",
                                "checkpoint-interval-ms", "300"));
        // The job JobRunner builds for these options, with a throttle after the source (so that
        // checkpoints complete while windows fire) and the failure before the sink.
        StreamExecutionEnvironment env = JobRunner.environment(options);
        RestartStrategyUtils.configureFixedDelayRestartStrategy(env, 2, 100L);
        StreamOutput.createStreamIfMissing(options);
        DataStream<byte[]> events = options.mode().source(env, options).map(new Throttle());
        YsbWorkload.addOutputs(
                YsbWorkload.results(events, options).map(new FailOnceAfterCheckpoint()), options);
        FailOnceAfterCheckpoint.reset();
        cluster.cluster().executeJobBlocking(env.getStreamGraph().getJobGraph());

        assertThat(FailOnceAfterCheckpoint.FAILED).as("the failure was injected").isTrue();
        List<String> uncommitted = FailOnceAfterCheckpoint.uncommitted();
        assertThat(uncommitted)
                .as("window results written in the transaction the failure aborted")
                .hasSizeGreaterThanOrEqualTo(FailOnceAfterCheckpoint.RESULTS_BEFORE_FAILURE);

        List<String> records =
                ResultRecords.readAll(BROKER.client(), "ysb-out", Duration.ofSeconds(2));
        assertThat(records).doesNotContainAnyElementsOf(uncommitted);
        List<CampaignWindowCount> windows = new ArrayList<>();
        records.forEach(r -> windows.add(CampaignWindowCount.parseCsv(r)));
        reference.assertExactlyOnceEach(windows);
        assertThat(YsbSummary.of(windows, reference.viewsPerWindow).toJson())
                .contains("\"views\":" + reference.views)
                .contains("\"complete\":true,\"fired_windows_exact\":true");

        Map<String, Long> after = BROKER.client().stats().get(30, TimeUnit.SECONDS);
        assertThat(delta(before, after, "nearstream_txn_aborted_total"))
                .as("transactions aborted on recovery")
                .isPositive();
        assertThat(delta(before, after, "nearstream_txn_committed_total")).isPositive();
        assertThat(after.get("nearstream_txn_open")).as("open transactions left").isZero();
        assertThat(after.get("nearstream_txn_prepared")).as("prepared ones left").isZero();
    }

    @Test
    void wordCountOutputsHoldEveryFinalCountAndWindowCount() throws Exception {
        Path text = ReferenceWordCount.hamletOpening();
        BROKER.createStream("text", 2);
        CorpusProducer.Result produced =
                CorpusProducer.produce(
                        NearstreamProducerConfig.builder(BROKER.client(), "text").build(),
                        TextRecords.read(text, 100),
                        1);
        Map<String, Long> reference = ReferenceWordCount.count(text, 1, tmp);
        long words = reference.values().stream().mapToLong(Long::longValue).sum();

        JobMeasurement m =
                JobRunner.run(
                        options(
                                WordCountWorkload.NAME,
                                "text",
                                produced.records(),
                                Map.of(
                                        "output-stream", "wordcount-out",
                                        "output-streamlets", "2",
                                        "output-guarantee", "at-least-once",
                                        "checkpoint-interval-ms", "200")),
                        cluster,
                        BROKER.client());

        List<String> records =
                ResultRecords.readAll(BROKER.client(), "wordcount-out", Duration.ofSeconds(2));
        assertThat(ResultRecords.wordTotals(records)).isEqualTo(reference);
        assertThat(records)
                .as("one word<TAB>count per running count, none lost")
                .hasSize((int) words)
                .contains(ResultRecords.wordCount("the", reference.get("the")));
        assertThat(m.result().recordsOut()).isEqualTo(words);

        // The windowed variant, to the stream beside its files: both hold the same window counts.
        Path files = tmp.resolve("windowed");
        JobMeasurement w =
                JobRunner.run(
                        options(
                                WindowedWordCountWorkload.NAME,
                                "text",
                                produced.records(),
                                Map.of(
                                        "output-dir",
                                        files.toString(),
                                        "output-stream",
                                        "windowed-out")),
                        cluster,
                        BROKER.client());
        Map<String, Long> sums = new TreeMap<>();
        List<String> windowRecords =
                ResultRecords.readAll(BROKER.client(), "windowed-out", Duration.ofSeconds(2));
        for (String r : windowRecords) {
            String[] f = r.split("\t");
            assertThat(f).as(r).hasSize(3);
            sums.merge(f[0], Long.parseLong(f[1]), Long::sum);
        }
        assertThat(windowRecords).hasSize((int) w.result().recordsOut());
        assertThat(sums)
                .as("window counts add up to 5 x the totals")
                .isEqualTo(WordCountFiles.readParts(files, WordCountFiles.Merge.SUM));
        reference.forEach(
                (word, n) ->
                        assertThat(sums.get(word)).isEqualTo(n * WordCountPipeline.WINDOW_SECONDS));
    }

    private static JobOptions options(
            String workload, String stream, long records, Map<String, String> params) {
        return JobOptions.bounded(
                workload, SourceMode.PULL, BROKER.address(), stream, 2, records, params);
    }

    private static long delta(Map<String, Long> before, Map<String, Long> after, String name) {
        assertThat(after).containsKey(name);
        return after.get(name) - before.getOrDefault(name, 0L);
    }

    /** Slows the events down (1 ms every 4) so that the job runs for seconds, not milliseconds. */
    static final class Throttle implements MapFunction<byte[], byte[]> {
        private static final long serialVersionUID = 1L;
        private long seen;

        @Override
        public byte[] map(byte[] event) throws InterruptedException {
            if (++seen % 4 == 0) {
                Thread.sleep(1);
            }
            return event;
        }
    }

    /**
     * Passes window results on to the sink and fails its task once: after a checkpoint that covered
     * results of this subtask completed (so the sink committed some), and once {@value
     * #RESULTS_BEFORE_FAILURE} results went to the sink since this subtask's last snapshot, which
     * the sink writer (chained after it, snapshotting at the same barrier) holds in a transaction
     * no checkpoint prepared. It waits before failing, so the producer sends them to the broker.
     * The state is static: one job at a time per JVM.
     */
    static final class FailOnceAfterCheckpoint
            extends RichMapFunction<CampaignWindowCount, CampaignWindowCount>
            implements CheckpointedFunction, CheckpointListener {
        private static final long serialVersionUID = 1L;

        static final int RESULTS_BEFORE_FAILURE = 5;
        static final AtomicBoolean RESULTS_COMMITTED = new AtomicBoolean();
        static final AtomicBoolean FAILED = new AtomicBoolean();
        private static final List<String> UNCOMMITTED =
                Collections.synchronizedList(new ArrayList<>());

        private transient List<String> sinceSnapshot;
        private transient long passed;
        private transient long firstCheckpointWithResults;

        static void reset() {
            RESULTS_COMMITTED.set(false);
            FAILED.set(false);
            UNCOMMITTED.clear();
        }

        static List<String> uncommitted() {
            synchronized (UNCOMMITTED) {
                return List.copyOf(UNCOMMITTED);
            }
        }

        @Override
        public CampaignWindowCount map(CampaignWindowCount result) throws Exception {
            if (RESULTS_COMMITTED.get()
                    && sinceSnapshot.size() >= RESULTS_BEFORE_FAILURE
                    && FAILED.compareAndSet(false, true)) {
                UNCOMMITTED.addAll(sinceSnapshot);
                Thread.sleep(200); // the producer's linger is 5 ms
                throw new RuntimeException(
                        "injected failure after "
                                + sinceSnapshot.size()
                                + " window results since the last checkpoint");
            }
            sinceSnapshot.add(result.toCsv());
            passed++;
            return result;
        }

        @Override
        public void initializeState(FunctionInitializationContext context) {
            sinceSnapshot = new ArrayList<>();
            firstCheckpointWithResults = Long.MAX_VALUE;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) {
            if (passed > 0) {
                firstCheckpointWithResults =
                        Math.min(firstCheckpointWithResults, context.getCheckpointId());
            }
            sinceSnapshot.clear();
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            if (checkpointId >= firstCheckpointWithResults) {
                RESULTS_COMMITTED.set(true);
            }
        }
    }
}
