package io.nearstream.benchmarks.sql;

import io.nearstream.benchmarks.workloads.ResultRecords;
import io.nearstream.benchmarks.workloads.WordTokenizer;
import io.nearstream.flink.source.ReadMode;
import java.util.List;
import java.util.Locale;
import org.apache.flink.table.api.TableEnvironment;

/**
 * Word count in Flink SQL, in batch mode, over the text records {@code CorpusProducer} writes to a
 * Nearstream stream (read up to the tail it has when the job starts), the final count of each word
 * written to another stream as one {@code word<TAB>count} record keyed by the word, the layout of
 * the DataStream word count's output ({@link ResultRecords#wordCount}, read back with {@link
 * ResultRecords#wordTotals}):
 *
 * <pre>
 * text_records (nearstream, raw BYTES, bounded)
 *   -> JOIN LATERAL TABLE(WORDS(record))    {@link WordTokenizer}'s words ({@link Words})
 *   -> GROUP BY word: COUNT(*)
 *   -> INSERT INTO word_counts (nearstream, raw)
 * </pre>
 *
 * Batch mode makes each count final before it is written: in streaming mode the same query is an
 * updating aggregate, which the append-only Nearstream sink refuses.
 *
 * <pre>{@code
 * TableEnvironment env = TableEnvironment.create(EnvironmentSettings.inBatchMode());
 * env.executeSql(new WordCountSql(broker, "text", "word-counts", ReadMode.PUSH).register(env)).await();
 * }</pre>
 *
 * @param broker the broker of both streams, host:port
 * @param textStream the stream of text records
 * @param resultStream the stream the counts go to (it must exist)
 * @param readMode how the source reads the text
 */
public record WordCountSql(
        String broker, String textStream, String resultStream, ReadMode readMode) {

    public static final String TEXT = "text_records";
    public static final String COUNTS = "word_counts";

    /** The source table: each record's bytes as they are. */
    public String textTable() {
        return TableDdl.nearstream(TEXT, "record BYTES", broker, textStream)
                .with("format", "raw")
                .with("scan.read-mode", readMode.name().toLowerCase(Locale.ROOT))
                .with("scan.bounded.mode", "latest")
                .toString();
    }

    /** The sink table: {@code word<TAB>count} as the record's value, the word as its key. */
    public String countsTable() {
        return TableDdl.nearstream(COUNTS, "word STRING, line STRING", broker, resultStream)
                .with("key.format", "raw")
                .with("key.fields", "word")
                .with("value.format", "raw")
                .with("value.fields-include", "EXCEPT_KEY")
                .toString();
    }

    /** The query: the words of every record, counted. CHR(9) is the tab. */
    public String insert() {
        return "INSERT INTO "
                + COUNTS
                + "\nSELECT word, CONCAT(word, CHR(9), CAST(COUNT(*) AS STRING))\n"
                + "FROM "
                + TEXT
                + "\nJOIN LATERAL TABLE("
                + Words.NAME
                + "(record)) AS w(word) ON TRUE\n"
                + "GROUP BY word";
    }

    /** The statements before the INSERT, in order. */
    public List<String> ddl() {
        return List.of(textTable(), countsTable());
    }

    /** Registers {@link Words} and the tables in {@code env}, and returns the INSERT to run. */
    public String register(TableEnvironment env) {
        env.createTemporarySystemFunction(Words.NAME, Words.class);
        for (String statement : ddl()) {
            env.executeSql(statement);
        }
        return insert();
    }
}
