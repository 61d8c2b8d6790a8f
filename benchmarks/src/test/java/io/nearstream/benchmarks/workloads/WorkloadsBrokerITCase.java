package io.nearstream.benchmarks.workloads;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NearstreamProducerConfig;
import io.nearstream.client.NettyNearstreamClient;
import io.nearstream.flink.source.NearstreamSource;
import io.nearstream.flink.source.NearstreamStoppingPositions;
import io.nearstream.flink.source.ReadMode;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import io.nearstream.process.BrokerProcess;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The workloads end to end: producers append to a real {@code nearstreamd}, Flink jobs read the
 * stream back in pull and in push mode, and both must give the same results, equal to the
 * independent reference.
 */
class WorkloadsBrokerITCase {

    @RegisterExtension
    static final MiniClusterExtension FLINK =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    private static final int REPEAT = 3;

    private static BrokerProcess broker;
    private static NearstreamClient client;

    @TempDir Path tmp;

    @BeforeAll
    static void startBroker() throws Exception {
        broker = BrokerProcess.start();
        client = NettyNearstreamClient.connect(broker.address());
    }

    @AfterAll
    static void stopBroker() {
        if (client != null) {
            client.close();
        }
        if (broker != null) {
            broker.close();
        }
    }

    private static DataStream<byte[]> read(
            StreamExecutionEnvironment env,
            String stream,
            ReadMode mode,
            WatermarkStrategy<byte[]> watermarks) {
        NearstreamSource<byte[]> source =
                NearstreamSource.<byte[]>builder()
                        .setBrokers(broker.address())
                        .setStream(stream)
                        .setReadMode(mode)
                        .setPushSlots(4, 256 * 1024)
                        .setDeserializer(NearstreamRecordDeserializationSchema.bytes())
                        .setFetchMaxWaitMs(100)
                        .setBounded(NearstreamStoppingPositions.latest())
                        .build();
        return env.fromSource(source, watermarks, "nearstream-" + mode);
    }

    private static StreamExecutionEnvironment env() {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        return env;
    }

    @Test
    void wordCountsArePullPushAndReferenceEqual() throws Exception {
        Path text = ReferenceWordCount.hamletOpening();
        StreamSetup.ensure(client, "text", 2);
        CorpusProducer.Result produced =
                CorpusProducer.produce(
                        NearstreamProducerConfig.builder(client, "text").build(),
                        TextRecords.read(text, 100),
                        REPEAT);
        assertThat(produced.records()).isGreaterThan(500);

        Map<String, Long> reference = ReferenceWordCount.count(text, REPEAT, tmp);
        Map<String, Long> fiveTimes = new TreeMap<>();
        reference.forEach((w, c) -> fiveTimes.put(w, c * WordCountPipeline.WINDOW_SECONDS));
        List<WordWindowCount> firstWindows = null;
        for (ReadMode mode : List.of(ReadMode.PULL, ReadMode.PUSH)) {
            Path out = tmp.resolve("counts-" + mode);
            StreamExecutionEnvironment env = env();
            WordCountPipeline.wordCounts(read(env, "text", mode, WatermarkStrategy.noWatermarks()))
                    .sinkTo(WordCountFileSink.maxPerWord(out));
            env.execute("word count " + mode);
            assertThat(WordCountFiles.readParts(out, WordCountFiles.Merge.MAX))
                    .as("word count, %s", mode)
                    .isEqualTo(reference);

            List<WordWindowCount> windows = new ArrayList<>();
            try (CloseableIterator<WordWindowCount> it =
                    WordCountPipeline.windowedWordCounts(
                                    read(env(), "text", mode, WordCountPipeline.sourceWatermarks()))
                            .executeAndCollect()) {
                it.forEachRemaining(windows::add);
            }
            Map<String, Long> sums = new TreeMap<>();
            windows.forEach(w -> sums.merge(w.word, w.count, Long::sum));
            assertThat(sums).as("window counts add up, %s", mode).isEqualTo(fiveTimes);
            if (firstWindows == null) {
                firstWindows = windows;
            } else {
                assertThat(windows)
                        .as("the same windows in pull and push mode")
                        .containsExactlyInAnyOrderElementsOf(firstWindows);
            }
        }
    }

    @Test
    void ysbCountsEveryProducedViewInPullAndPushMode() throws Exception {
        Path table = tmp.resolve("campaigns.csv");
        YsbCampaigns campaigns = YsbCampaigns.generate(5);
        campaigns.write(table);
        StreamSetup.ensure(client, "ysb", 2);
        YsbProducer.Result produced =
                YsbProducer.produceTo(
                        NearstreamProducerConfig.builder(client, "ysb").build(),
                        campaigns,
                        20_000,
                        0,
                        2,
                        5);
        assertThat(produced.views()).isBetween(6_000L, 7_400L);

        List<String> first = null;
        for (ReadMode mode : List.of(ReadMode.PULL, ReadMode.PUSH)) {
            Path out = tmp.resolve("ysb-" + mode);
            StreamExecutionEnvironment env = env();
            // A bounded job fires every window at end of input; an out-of-orderness bound larger
            // than the run keeps the result independent of how the readers interleave streamlets.
            YsbPipeline.campaignWindowCounts(
                            read(env, "ysb", mode, WatermarkStrategy.noWatermarks()),
                            YsbCampaigns.read(table).adToCampaign(),
                            Duration.ofHours(1))
                    .sinkTo(new YsbWindowSink(out));
            env.execute("ysb " + mode);
            List<CampaignWindowCount> windows = YsbSummary.read(out);
            assertThat(YsbSummary.of(windows, produced.viewsPerWindow()).toJson())
                    .as("ysb %s", mode)
                    .contains("\"complete\":true,\"fired_windows_exact\":true");
            List<String> results = new ArrayList<>();
            windows.forEach(
                    w ->
                            results.add(
                                    w.campaignId
                                            + "@"
                                            + w.windowEnd
                                            + "="
                                            + w.count
                                            + "/"
                                            + w.maxEventTime));
            if (first == null) {
                first = results;
            } else {
                assertThat(results).containsExactlyInAnyOrderElementsOf(first);
            }
        }
    }
}
