package io.nearstream.benchmarks.sql;

import io.nearstream.benchmarks.workloads.WordTokenizer;
import org.apache.flink.table.functions.TableFunction;

/**
 * {@code WORDS(record BYTES)}: the words of a text record, one row each, cut by {@link
 * WordTokenizer} (maximal runs of ASCII letters and digits, lowercased, every other byte a
 * separator), joined as {@code JOIN LATERAL TABLE(WORDS(record)) AS w(word) ON TRUE}. SQL's
 * built-ins cannot do the same: {@code SPLIT_INDEX} and {@code REGEXP_EXTRACT} give one piece per
 * call, not a row per word, and decoding the record as a string first would turn invalid UTF-8 into
 * replacement characters the tokenizer never sees.
 */
public final class Words extends TableFunction<String> {

    private static final long serialVersionUID = 1L;

    /** The name {@link WordCountSql} registers it under. */
    public static final String NAME = "WORDS";

    public void eval(byte[] record) {
        if (record != null) {
            WordTokenizer.forEachWord(record, this::collect);
        }
    }
}
