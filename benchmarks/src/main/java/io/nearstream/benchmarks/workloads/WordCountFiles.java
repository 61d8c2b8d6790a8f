package io.nearstream.benchmarks.workloads;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Word counts as "word TAB count" text files: the parts {@link WordCountFileSink} writes and the
 * output of {@code scripts/wordcount_reference.py}.
 */
public final class WordCountFiles {

    static final String PART_PREFIX = "word-counts-";
    static final String PART_SUFFIX = ".tsv";

    /** How two values of one word combine. */
    public enum Merge {
        /** The larger value: totals from running counts. */
        MAX,
        /** The sum. */
        SUM;

        void into(Map<String, Long> counts, String word, long value) {
            if (this == MAX) {
                counts.merge(word, value, Math::max);
            } else {
                counts.merge(word, value, Long::sum);
            }
        }
    }

    private WordCountFiles() {}

    static Path partFile(Path directory, int subtask) {
        return directory.resolve(PART_PREFIX + subtask + PART_SUFFIX);
    }

    /** Merges every part file a {@link WordCountFileSink} wrote into {@code directory}. */
    public static TreeMap<String, Long> readParts(Path directory, Merge merge) throws IOException {
        TreeMap<String, Long> counts = new TreeMap<>();
        int parts = 0;
        try (DirectoryStream<Path> files =
                Files.newDirectoryStream(directory, PART_PREFIX + "*" + PART_SUFFIX)) {
            for (Path file : files) {
                parts++;
                for (Map.Entry<String, Long> e : readTsv(file).entrySet()) {
                    merge.into(counts, e.getKey(), e.getValue());
                }
            }
        }
        if (parts == 0) {
            throw new IOException(
                    "no " + PART_PREFIX + "*" + PART_SUFFIX + " files in " + directory);
        }
        return counts;
    }

    /** Reads one "word TAB count" file. */
    public static TreeMap<String, Long> readTsv(Path file) throws IOException {
        TreeMap<String, Long> counts = new TreeMap<>();
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            if (line.isEmpty()) {
                continue;
            }
            int tab = line.indexOf('\t');
            try {
                if (tab <= 0
                        || counts.put(
                                        line.substring(0, tab),
                                        Long.parseLong(line.substring(tab + 1)))
                                != null) {
                    throw new NumberFormatException("duplicate word or no TAB");
                }
            } catch (NumberFormatException e) {
                throw new IOException(
                        file
                                + " line "
                                + (i + 1)
                                + ": expected \"word<TAB>count\" with each word"
                                + " once, got \""
                                + line
                                + "\"",
                        e);
            }
        }
        return counts;
    }

    /** Writes "word TAB count" lines sorted by word, atomically (temp file, then rename). */
    public static void write(Path file, Map<String, Long> counts) throws IOException {
        Files.createDirectories(file.toAbsolutePath().getParent());
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        try (BufferedWriter w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
            for (Map.Entry<String, Long> e : new TreeMap<>(counts).entrySet()) {
                w.write(e.getKey());
                w.write('\t');
                w.write(Long.toString(e.getValue()));
                w.write('\n');
            }
        }
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }
}
