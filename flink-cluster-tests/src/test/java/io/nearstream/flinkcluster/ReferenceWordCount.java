package io.nearstream.flinkcluster;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * Runs {@code scripts/wordcount_reference.py}, the independent word count (its own tokenizer, in
 * another language) that the jobs' output is checked against.
 */
final class ReferenceWordCount {

    private ReferenceWordCount() {}

    /** Word to count for {@code text}. */
    static Map<String, Long> count(Path text, Path workDir)
            throws IOException, InterruptedException {
        Path script = Repository.file("scripts/wordcount_reference.py");
        Path out = Files.createTempFile(workDir, "reference-", ".tsv");
        Process p =
                new ProcessBuilder(
                                "python3",
                                script.toString(),
                                text.toString(),
                                "--out",
                                out.toString())
                        .redirectErrorStream(true)
                        .start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException("wordcount_reference.py did not finish in 120 s");
        }
        if (p.exitValue() != 0) {
            throw new IOException("wordcount_reference.py failed: " + output);
        }
        Map<String, Long> counts = new TreeMap<>();
        for (String line : Files.readAllLines(out, StandardCharsets.US_ASCII)) {
            int tab = line.indexOf('\t');
            counts.put(line.substring(0, tab), Long.parseLong(line.substring(tab + 1)));
        }
        return counts;
    }
}
