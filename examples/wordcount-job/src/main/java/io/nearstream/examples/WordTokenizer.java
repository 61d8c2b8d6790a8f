package io.nearstream.examples;

import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.util.Collector;

/**
 * Splits text into words: a word is a maximal run of ASCII letters and digits {@code [A-Za-z0-9]},
 * lower-cased; every other character separates words (so {@code don't} is {@code don} and {@code
 * t}, and any non-ASCII character is a separator). The rule of {@code
 * scripts/wordcount_reference.py}, which counts the same text independently to check this job.
 */
public final class WordTokenizer implements FlatMapFunction<String, String> {

    private static final long serialVersionUID = 1L;

    @Override
    public void flatMap(String text, Collector<String> out) {
        int n = text.length();
        int i = 0;
        while (i < n) {
            while (i < n && !isWordChar(text.charAt(i))) {
                i++;
            }
            int start = i;
            while (i < n && isWordChar(text.charAt(i))) {
                i++;
            }
            if (i > start) {
                out.collect(toLowerAscii(text.substring(start, i)));
            }
        }
    }

    static boolean isWordChar(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    }

    /** ASCII only: String.toLowerCase would follow the default locale (a Turkish dotless i). */
    private static String toLowerAscii(String word) {
        char[] chars = word.toCharArray();
        for (int i = 0; i < chars.length; i++) {
            if (chars[i] >= 'A' && chars[i] <= 'Z') {
                chars[i] = (char) (chars[i] + ('a' - 'A'));
            }
        }
        return new String(chars);
    }
}
