package io.nearstream.benchmarks.workloads;

import java.util.Objects;

/** One result of the windowed word count: how often {@code word} occurs in one window. */
public class WordWindowCount {

    /** The word (lowercase). */
    public String word;

    /** The window's end, exclusive, in epoch milliseconds of event time. */
    public long windowEnd;

    /** Occurrences of the word in the window. */
    public long count;

    /** For Flink's POJO serializer. */
    public WordWindowCount() {}

    public WordWindowCount(String word, long windowEnd, long count) {
        this.word = word;
        this.windowEnd = windowEnd;
        this.count = count;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof WordWindowCount)) {
            return false;
        }
        WordWindowCount other = (WordWindowCount) o;
        return windowEnd == other.windowEnd && count == other.count && word.equals(other.word);
    }

    @Override
    public int hashCode() {
        return Objects.hash(word, windowEnd, count);
    }

    @Override
    public String toString() {
        return word + "@" + windowEnd + "=" + count;
    }
}
