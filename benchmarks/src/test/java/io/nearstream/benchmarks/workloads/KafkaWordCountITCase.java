package io.nearstream.benchmarks.workloads;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.benchmarks.jobs.JobMeasurement;
import io.nearstream.benchmarks.jobs.JobOptions;
import io.nearstream.benchmarks.jobs.JobRunner;
import io.nearstream.benchmarks.jobs.LocalFlinkCluster;
import io.nearstream.benchmarks.jobs.SourceMode;
import io.nearstream.benchmarks.jobs.WindowedWordCountWorkload;
import io.nearstream.benchmarks.jobs.WordCountWorkload;
import io.nearstream.benchmarks.kafka.KafkaBroker;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The word-count workloads in {@code kafka} mode, end to end: a real Kafka node, the Hamlet slice
 * written {@value #REPEAT} times by {@link CorpusProducer} through its Kafka sink, then the word
 * count and windowed word count jobs on Flink's Kafka source, exactly as {@code run.py wordcount
 * --modes kafka} runs them. Their files must equal the independent reference (and 5x it for the
 * window counts), as in pull and push mode ({@code WorkloadJobsITCase}).
 */
class KafkaWordCountITCase {

    private static final String TOPIC = "text";
    private static final int PARTITIONS = 2;
    private static final int REPEAT = 2;

    @TempDir Path tmp;

    @Test
    void wordCountJobsOnKafkaWriteTheReferenceCounts() throws Exception {
        Path text = ReferenceWordCount.hamletOpening();
        Map<String, Long> reference = ReferenceWordCount.count(text, REPEAT, tmp);
        long words = reference.values().stream().mapToLong(Long::longValue).sum();
        Map<String, Long> fiveTimes = new TreeMap<>();
        reference.forEach((w, c) -> fiveTimes.put(w, c * WordCountPipeline.WINDOW_SECONDS));

        try (KafkaBroker kafka = KafkaBroker.start();
                LocalFlinkCluster cluster = LocalFlinkCluster.start(2)) {
            kafka.createTopic(TOPIC, PARTITIONS);
            CorpusProducer.Result produced;
            try (EventSink sink =
                    EventSink.kafka(kafka.bootstrapServers(), TOPIC, 16 * 1024, 5, true)) {
                produced = CorpusProducer.produce(sink, TextRecords.read(text, 100), REPEAT);
            }
            assertThat(kafka.endOffsets(TOPIC).values().stream().mapToLong(Long::longValue).sum())
                    .as("records in the topic")
                    .isEqualTo(produced.records());

            Path counts = tmp.resolve("wordcount-kafka");
            JobMeasurement m =
                    JobRunner.run(
                            options(kafka, WordCountWorkload.NAME, produced.records(), counts),
                            cluster,
                            null);
            assertThat(WordCountFiles.readParts(counts, WordCountFiles.Merge.MAX))
                    .isEqualTo(reference);
            assertThat(m.records()).isEqualTo(produced.records());
            assertThat(m.result().valueBytes()).isEqualTo(produced.bytes());
            assertThat(m.result().recordsOut()).as("one running count per word").isEqualTo(words);

            Path windows = tmp.resolve("windowed-kafka");
            JobRunner.run(
                    options(kafka, WindowedWordCountWorkload.NAME, produced.records(), windows),
                    cluster,
                    null);
            assertThat(WordCountFiles.readParts(windows, WordCountFiles.Merge.SUM))
                    .as("window counts add up to 5x the reference")
                    .isEqualTo(fiveTimes);
        }
    }

    private static JobOptions options(
            KafkaBroker kafka, String workload, long records, Path outputDir) {
        return JobOptions.bounded(
                workload,
                SourceMode.KAFKA,
                kafka.bootstrapServers(),
                TOPIC,
                2,
                records,
                Map.of("output-dir", outputDir.toString()));
    }
}
