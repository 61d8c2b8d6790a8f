package io.nearstream.benchmarks.sql;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.benchmarks.workloads.CorpusProducer;
import io.nearstream.benchmarks.workloads.ReferenceWordCount;
import io.nearstream.benchmarks.workloads.ResultRecords;
import io.nearstream.benchmarks.workloads.TextRecords;
import io.nearstream.client.NearstreamProducerConfig;
import io.nearstream.flink.source.ReadMode;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Word count in Flink SQL ({@link WordCountSql}, batch mode) against the real broker, in pull and
 * in push mode: the counts it writes equal the independent reference count
 * (scripts/wordcount_reference.py) of the same text.
 */
class WordCountSqlITCase {

    private static final int REPEAT = 3;
    private static final int STREAMLETS = 2;

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    @RegisterExtension
    static final MiniClusterExtension FLINK =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    @TempDir static Path tmp;

    private static Map<String, Long> reference;

    @BeforeAll
    static void produceTheText() throws Exception {
        Path text = ReferenceWordCount.hamletOpening();
        BROKER.createStream("text", STREAMLETS);
        CorpusProducer.Result produced =
                CorpusProducer.produce(
                        NearstreamProducerConfig.builder(BROKER.client(), "text").build(),
                        TextRecords.read(text, 100),
                        REPEAT);
        assertThat(produced.records()).isGreaterThan(500);
        reference = ReferenceWordCount.count(text, REPEAT, tmp);
        assertThat(reference).hasSizeGreaterThan(800);
    }

    @ParameterizedTest
    @EnumSource(
            value = ReadMode.class,
            names = {"PULL", "PUSH"})
    void sqlWordCountEqualsTheReference(ReadMode mode) throws Exception {
        String out = "word-counts-" + mode.name().toLowerCase(Locale.ROOT);
        BROKER.createStream(out, STREAMLETS);
        TableEnvironment env = TableEnvironment.create(EnvironmentSettings.inBatchMode());
        env.getConfig().set("parallelism.default", "2");
        WordCountSql wordCount = new WordCountSql(BROKER.address(), "text", out, mode);
        env.executeSql(wordCount.register(env)).await(2, TimeUnit.MINUTES);

        List<String> records = ResultRecords.readAll(BROKER.client(), out, Duration.ofSeconds(1));
        assertThat(ResultRecords.wordTotals(records)).as(mode.name()).isEqualTo(reference);
        assertThat(records).as("batch mode: one final count per word").hasSize(reference.size());
    }
}
