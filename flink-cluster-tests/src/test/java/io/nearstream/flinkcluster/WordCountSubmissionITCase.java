package io.nearstream.flinkcluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.benchmarks.workloads.ReferenceWordCount;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The example word count job (examples/wordcount-job) submitted to a real Flink session cluster the
 * ways users submit jobs: its fat jar (connector inside) through the REST API and with {@code flink
 * run} to a plain cluster, and its thin jar to a cluster with the connector in lib/. Each run must
 * write exactly the running counts of the corpus, checked against the independent reference count:
 * for a word with total n, the counts 1..n once each.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class WordCountSubmissionITCase {

    private static final Duration RESULT_TIMEOUT = Duration.ofSeconds(90);

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    @TempDir static Path tmp;

    /** The text the other word count tests use (benchmarks' workload tests). */
    private static Path corpus;

    private static List<String> lines;
    private static Map<String, Long> totals;

    @BeforeAll
    static void referenceCounts() throws Exception {
        corpus = Repository.file("benchmarks/src/test/resources/workloads/hamlet-opening.txt");
        lines =
                Files.readAllLines(corpus, StandardCharsets.UTF_8).stream()
                        .filter(line -> !line.isBlank())
                        .toList();
        totals = ReferenceWordCount.count(corpus, 1, tmp);
        assertThat(totals).hasSizeGreaterThan(800);
    }

    @Nested
    class ConnectorInTheJobJar {

        @RegisterExtension static final FlinkSessionCluster FLINK = new FlinkSessionCluster();

        @Test
        void fatJarSubmittedThroughRestReadsWithPull() throws Exception {
            runWordCount(FLINK, Submission.REST, ExampleJobs.jar("fat"), "pull", "rest-fat-pull");
        }

        @Test
        void fatJarSubmittedWithFlinkRunReadsWithPush() throws Exception {
            runWordCount(FLINK, Submission.CLI, ExampleJobs.jar("fat"), "push", "cli-fat-push");
        }
    }

    @Nested
    class ConnectorInLib {

        @RegisterExtension
        static final FlinkSessionCluster FLINK =
                FlinkSessionCluster.builder().connectorInLib(true).build();

        @Test
        void thinJarSubmittedThroughRestReadsWithPush() throws Exception {
            runWordCount(FLINK, Submission.REST, ExampleJobs.jar("thin"), "push", "rest-thin-push");
        }
    }

    private enum Submission {
        REST,
        CLI
    }

    /**
     * Half of the corpus is in the input stream before the job starts, the other half is appended
     * once the first counts are out (so the job reads an unbounded stream across several
     * checkpoints and transactions); then the output must be exact, and the job still running.
     */
    private static void runWordCount(
            FlinkSessionCluster flink, Submission how, Path jar, String mode, String name)
            throws Exception {
        String input = "words-" + name;
        String output = "counts-" + name;
        BROKER.createStream(input, 4);
        BROKER.createStream(output, 4);
        int half = lines.size() / 2;
        Streams.produce(BROKER.client(), input, lines.subList(0, half));
        long pushedBefore = brokerStat("nearstream_push_records_total");

        List<String> args =
                ExampleJobs.wordCountArgs(
                        BROKER.address(), input, output, mode, 2, "wordcount-" + name);
        String job =
                how == Submission.REST
                        ? flink.submitRest(jar, ExampleJobs.WORD_COUNT, args)
                        : flink.submitCli(jar, ExampleJobs.WORD_COUNT, args);
        Throwable failure = null;
        try {
            flink.awaitJobState(job, "RUNNING", Duration.ofSeconds(60));
            try (Streams.Reader reader = new Streams.Reader(BROKER.client(), output)) {
                assertThat(reader.readAtLeast(1, RESULT_TIMEOUT))
                        .as("counts of the first half, committed with a checkpoint")
                        .isNotEmpty();
                Streams.produce(BROKER.client(), input, lines.subList(half, lines.size()));

                reader.readAtLeast(RunningCounts.expectedSize(totals), RESULT_TIMEOUT);
                // A duplicate would come in the same reads; a short quiet period catches it.
                List<String> counts = reader.readUntilQuiet(Duration.ofSeconds(2));
                assertThat(RunningCounts.differences(totals, counts))
                        .as("the output against the reference counts of " + corpus)
                        .isEmpty();
            }
            assertThat(flink.jobState(job)).isEqualTo("RUNNING");
            long pushed = brokerStat("nearstream_push_records_total") - pushedBefore;
            if (mode.equals("push")) {
                assertThat(pushed)
                        .as("records the broker pushed")
                        .isGreaterThanOrEqualTo(lines.size());
            } else {
                assertThat(pushed).as("records the broker pushed").isZero();
            }
        } catch (Exception | AssertionError e) {
            failure = e;
            throw e;
        } finally {
            cancel(flink, job, failure);
        }
    }

    /** Cancels the job; when the test failed already, a failure to cancel only adds to that. */
    private static void cancel(FlinkSessionCluster flink, String job, Throwable failure)
            throws Exception {
        try {
            flink.cancel(job);
        } catch (Exception | AssertionError e) {
            if (failure == null) {
                throw e;
            }
            failure.addSuppressed(e);
        }
    }

    private static long brokerStat(String name) throws Exception {
        return BROKER.client().stats().get(30, TimeUnit.SECONDS).getOrDefault(name, 0L);
    }
}
