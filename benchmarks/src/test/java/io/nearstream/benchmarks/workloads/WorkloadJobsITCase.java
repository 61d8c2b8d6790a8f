package io.nearstream.benchmarks.workloads;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.benchmarks.jobs.JobMeasurement;
import io.nearstream.benchmarks.jobs.JobOptions;
import io.nearstream.benchmarks.jobs.JobRunner;
import io.nearstream.benchmarks.jobs.LocalFlinkCluster;
import io.nearstream.benchmarks.jobs.SourceMode;
import io.nearstream.benchmarks.jobs.WindowedWordCountWorkload;
import io.nearstream.benchmarks.jobs.WordCountWorkload;
import io.nearstream.benchmarks.jobs.YsbWorkload;
import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NearstreamProducerConfig;
import io.nearstream.client.NettyNearstreamClient;
import io.nearstream.process.BrokerProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The word count and YSB workloads as the benchmark runner starts them (through {@link
 * JobRunner#run}, with their flags as workload parameters) against a real {@code nearstreamd}, in
 * pull and in push mode: the files they write equal the independent reference (word counts) or the
 * producer's own record (YSB views per window), and their meters count records in and out.
 */
class WorkloadJobsITCase {

    private static final int REPEAT = 2;

    private static BrokerProcess broker;
    private static NearstreamClient client;
    private static LocalFlinkCluster cluster;

    @TempDir static Path tmp;

    @BeforeAll
    static void start() throws Exception {
        broker = BrokerProcess.start(1);
        client = NettyNearstreamClient.connect(broker.address());
        cluster = LocalFlinkCluster.start(2);
    }

    @AfterAll
    static void stop() throws Exception {
        try {
            if (cluster != null) {
                cluster.close();
            }
        } finally {
            if (client != null) {
                client.close();
            }
            if (broker != null) {
                broker.close();
            }
        }
    }

    private static JobOptions options(
            String workload, SourceMode mode, String stream, long records, Map<String, String> p) {
        return new JobOptions(
                workload,
                mode,
                broker.address(),
                stream,
                2,
                records,
                JobOptions.DEFAULT_FETCH_BYTES,
                4,
                256 * 1024,
                "",
                false,
                p);
    }

    @Test
    void wordCountJobsWriteTheReferenceCountsInEachMode() throws Exception {
        Path text = ReferenceWordCount.hamletOpening();
        StreamSetup.ensure(client, "text", 2);
        CorpusProducer.Result produced =
                CorpusProducer.produce(
                        NearstreamProducerConfig.builder(client, "text").build(),
                        TextRecords.read(text, 100),
                        REPEAT);
        Map<String, Long> reference = ReferenceWordCount.count(text, REPEAT, tmp);
        long words = reference.values().stream().mapToLong(Long::longValue).sum();
        Map<String, Long> fiveTimes = new TreeMap<>();
        reference.forEach((w, c) -> fiveTimes.put(w, c * WordCountPipeline.WINDOW_SECONDS));

        for (SourceMode mode : List.of(SourceMode.PULL, SourceMode.PUSH)) {
            Path counts = tmp.resolve("wordcount-" + mode);
            JobMeasurement m =
                    JobRunner.run(
                            options(
                                    WordCountWorkload.NAME,
                                    mode,
                                    "text",
                                    produced.records(),
                                    Map.of("output-dir", counts.toString())),
                            cluster,
                            client);
            assertThat(WordCountFiles.readParts(counts, WordCountFiles.Merge.MAX))
                    .as("word count, %s", mode)
                    .isEqualTo(reference);
            assertThat(m.records()).isEqualTo(produced.records());
            assertThat(m.result().valueBytes()).isEqualTo(produced.bytes());
            assertThat(m.result().recordsOut()).as("one running count per word").isEqualTo(words);

            Path windows = tmp.resolve("windowed-" + mode);
            JobMeasurement w =
                    JobRunner.run(
                            options(
                                    WindowedWordCountWorkload.NAME,
                                    mode,
                                    "text",
                                    produced.records(),
                                    Map.of("output-dir", windows.toString())),
                            cluster,
                            client);
            assertThat(WordCountFiles.readParts(windows, WordCountFiles.Merge.SUM))
                    .as("window counts add up, %s", mode)
                    .isEqualTo(fiveTimes);
            assertThat(w.records()).isEqualTo(produced.records());
            assertThat(w.result().recordsOut())
                    .as("at least one result per distinct word and window")
                    .isGreaterThanOrEqualTo(
                            reference.size() * (long) WordCountPipeline.WINDOW_SECONDS);
        }
        assertThat(pushRegions()).isEmpty();
    }

    @Test
    void ysbJobCountsEveryProducedViewInEachMode() throws Exception {
        Path table = tmp.resolve("campaigns.csv");
        YsbCampaigns campaigns = YsbCampaigns.generate(7);
        campaigns.write(table);
        StreamSetup.ensure(client, "ysb", 2);
        YsbProducer.Result produced =
                YsbProducer.produceTo(
                        NearstreamProducerConfig.builder(client, "ysb").build(),
                        campaigns,
                        10_000,
                        0,
                        2,
                        7);

        for (SourceMode mode : List.of(SourceMode.PULL, SourceMode.PUSH)) {
            Path out = tmp.resolve("ysb-" + mode);
            JobMeasurement m =
                    JobRunner.run(
                            options(
                                    YsbWorkload.NAME,
                                    mode,
                                    "ysb",
                                    produced.events(),
                                    // A bound longer than the run: every view counts whatever the
                                    // order the readers interleave the streamlets in.
                                    Map.of(
                                            "output-dir", out.toString(),
                                            "ysb-campaigns", table.toString(),
                                            "out-of-orderness-ms", "3600000")),
                            cluster,
                            client);
            List<CampaignWindowCount> windows = YsbSummary.read(out);
            assertThat(YsbSummary.of(windows, produced.viewsPerWindow()).toJson())
                    .as("ysb %s", mode)
                    .contains("\"complete\":true,\"fired_windows_exact\":true");
            assertThat(m.records()).isEqualTo(produced.events());
            assertThat(m.result().recordsOut()).isEqualTo(windows.size());
        }
    }

    @Test
    void ysbWithoutItsCampaignTableIsRefusedWithTheFlagToGive() {
        assertThatThrownBy(
                        () ->
                                JobRunner.run(
                                        options(
                                                YsbWorkload.NAME,
                                                SourceMode.PULL,
                                                "ysb",
                                                0,
                                                Map.of("output-dir", tmp.toString())),
                                        cluster,
                                        client))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--ysb-campaigns FILE");
    }

    private static List<String> pushRegions() throws IOException {
        try (Stream<Path> files = Files.list(Path.of("/dev/shm"))) {
            return files.map(p -> p.getFileName().toString())
                    .filter(n -> n.startsWith("nearstream-push-" + broker.pid() + "-"))
                    .toList();
        }
    }
}
