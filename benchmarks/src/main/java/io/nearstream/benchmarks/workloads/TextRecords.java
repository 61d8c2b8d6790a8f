package io.nearstream.benchmarks.workloads;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Cuts a text into the records the word-count workloads read: consecutive pieces of about {@code
 * targetBytes} bytes, each ending just after a whitespace byte (space, tab, CR, LF), so that no
 * word is ever split between two records. A piece is the longest such prefix that fits in {@code
 * targetBytes}; when a run of non-whitespace is longer than that, the piece grows to the next
 * whitespace (the rare case where a record exceeds the target). The pieces concatenated give the
 * text back byte for byte.
 *
 * <p>The producers of the pull-vs-push co-location paper (Marcu and Bouvry) read Wikipedia in
 * chunks of 2 KiB records, hence the default {@value #DEFAULT_RECORD_BYTES}; 100 matches the
 * synthetic workloads' record size.
 */
public final class TextRecords {

    public static final int DEFAULT_RECORD_BYTES = 2048;

    private TextRecords() {}

    /** Reads a file and cuts it (see the class comment). */
    public static List<byte[]> read(Path file, int targetBytes) throws IOException {
        return split(Files.readAllBytes(file), targetBytes);
    }

    /** Cuts {@code text} into pieces of about {@code targetBytes} (see the class comment). */
    public static List<byte[]> split(byte[] text, int targetBytes) {
        if (targetBytes < 1) {
            throw new IllegalArgumentException("record size must be >= 1 byte, got " + targetBytes);
        }
        List<byte[]> records = new ArrayList<>(text.length / targetBytes + 1);
        int start = 0;
        while (start < text.length) {
            int limit = Math.min(text.length, start + targetBytes);
            int end;
            if (limit == text.length) {
                end = limit;
            } else {
                end = limit;
                while (end > start && !isWhitespace(text[end - 1])) {
                    end--;
                }
                if (end == start) {
                    // One word longer than the target: take it whole, up to its whitespace.
                    end = limit;
                    while (end < text.length && !isWhitespace(text[end - 1])) {
                        end++;
                    }
                }
            }
            records.add(Arrays.copyOfRange(text, start, end));
            start = end;
        }
        return records;
    }

    static boolean isWhitespace(byte b) {
        return b == ' ' || b == '\n' || b == '\r' || b == '\t';
    }
}
