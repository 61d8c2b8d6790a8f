package io.nearstream.benchmarks.workloads;

import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.util.Collector;

/**
 * The word-count tokenizer (the {@code Tokenizer} of Listing 2 of the pull-vs-push co-location
 * paper, Marcu and Bouvry): a word is a maximal run of ASCII letters and digits {@code
 * [A-Za-z0-9]}, lowercased; every other byte separates words. It works on the record's UTF-8 bytes
 * without decoding them: ASCII letters and digits are single bytes in UTF-8 and every byte of a
 * multi-byte character is {@code >= 0x80}, so a non-ASCII character is a separator, just as it is
 * for {@code scripts/wordcount_reference.py}. Apostrophes separate too ({@code don't} is {@code
 * don} and {@code t}), as in Flink's WordCount example.
 *
 * <p>Emits {@code (word, 1)} per word.
 */
public final class WordTokenizer implements FlatMapFunction<byte[], Tuple2<String, Long>> {

    private static final long serialVersionUID = 1L;

    private static final Long ONE = 1L;

    private transient byte[] scratch;

    @Override
    public void flatMap(byte[] record, Collector<Tuple2<String, Long>> out) {
        if (scratch == null || scratch.length < record.length) {
            scratch = new byte[Math.max(64, record.length)];
        }
        forEachWord(record, scratch, word -> out.collect(Tuple2.of(word, ONE)));
    }

    /** Calls {@code action} with each word of {@code record}, lowercased, in order. */
    public static void forEachWord(byte[] record, Consumer<String> action) {
        forEachWord(record, new byte[record.length], action);
    }

    private static void forEachWord(byte[] record, byte[] scratch, Consumer<String> action) {
        int n = record.length;
        int i = 0;
        while (i < n) {
            while (i < n && !isWordByte(record[i])) {
                i++;
            }
            int len = 0;
            while (i < n && isWordByte(record[i])) {
                byte b = record[i++];
                scratch[len++] = (b >= 'A' && b <= 'Z') ? (byte) (b + ('a' - 'A')) : b;
            }
            if (len > 0) {
                // Latin-1 decoding of ASCII bytes is the JDK's compact-string fast path.
                action.accept(new String(scratch, 0, len, StandardCharsets.ISO_8859_1));
            }
        }
    }

    static boolean isWordByte(byte b) {
        return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9');
    }
}
