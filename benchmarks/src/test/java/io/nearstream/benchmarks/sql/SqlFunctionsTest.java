package io.nearstream.benchmarks.sql;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.benchmarks.workloads.WordTokenizer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.Test;

/** The functions the SQL jobs register, called as the planner's generated code calls them. */
class SqlFunctionsTest {

    /** Collects what a table function emits. */
    private static final class Rows<T> implements Collector<T> {
        final List<T> rows = new ArrayList<>();

        @Override
        public void collect(T row) {
            rows.add(row);
        }

        @Override
        public void close() {}
    }

    @Test
    void wordsEmitsTheTokenizersWordsInOrder() {
        byte[] record =
                "Don't STOP: 2b-or-not-2b, caf\u00e9\u00a0x\n".getBytes(StandardCharsets.UTF_8);
        List<String> tokenizer = new ArrayList<>();
        WordTokenizer.forEachWord(record, tokenizer::add);

        Words words = new Words();
        Rows<String> out = new Rows<>();
        words.setCollector(out);
        words.eval(record);
        words.eval(null);

        assertThat(out.rows)
                .containsExactly("don", "t", "stop", "2b", "or", "not", "2b", "caf", "x")
                .isEqualTo(tokenizer);
    }

    @Test
    void campaignOfJoinsKnownAdsAndDropsOthers() {
        CampaignOf campaignOf = new CampaignOf(Map.of("ad-1", "campaign-a", "ad-2", "campaign-b"));
        Rows<String> out = new Rows<>();
        campaignOf.setCollector(out);
        campaignOf.eval("ad-2");
        campaignOf.eval("ad-unknown");
        campaignOf.eval(null);
        campaignOf.eval("ad-1");
        assertThat(out.rows).containsExactly("campaign-b", "campaign-a");
    }

    @Test
    void epochMillisIsTheInstantsMilliseconds() {
        EpochMillis epochMillis = new EpochMillis();
        assertThat(epochMillis.eval(Instant.ofEpochMilli(1_700_000_009_999L)))
                .isEqualTo(1_700_000_009_999L);
        assertThat(epochMillis.eval(null)).isNull();
    }

    @Test
    void tableDdlQuotesOptionValues() {
        assertThat(
                        TableDdl.nearstream("t", "x STRING", "127.0.0.1:7420", "it's")
                                .with("format", "raw")
                                .toString())
                .isEqualTo(
                        "CREATE TEMPORARY TABLE t (\n  x STRING\n) WITH (\n"
                                + "  'connector' = 'nearstream',\n"
                                + "  'brokers' = '127.0.0.1:7420',\n"
                                + "  'stream' = 'it''s',\n"
                                + "  'format' = 'raw'\n)");
    }
}
