package io.nearstream.benchmarks.workloads;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Runs scripts/wordcount_reference.py, the independent count the jobs are checked against. */
public final class ReferenceWordCount {

    private ReferenceWordCount() {}

    /** The test resource {@code workloads/hamlet-opening.txt} as a file. */
    public static Path hamletOpening() {
        return repoRoot().resolve("benchmarks/src/test/resources/workloads/hamlet-opening.txt");
    }

    public static Map<String, Long> count(Path text, int repeat, Path workDir) throws Exception {
        Path script = repoRoot().resolve("scripts/wordcount_reference.py");
        Path out = Files.createTempFile(workDir, "reference-", ".tsv");
        Process p =
                new ProcessBuilder(
                                "python3",
                                script.toString(),
                                text.toString(),
                                "--repeat",
                                Integer.toString(repeat),
                                "--out",
                                out.toString())
                        .redirectErrorStream(true)
                        .start();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException("wordcount_reference.py did not finish in 120 s");
        }
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.exitValue() != 0) {
            throw new IOException("wordcount_reference.py failed: " + output);
        }
        return WordCountFiles.readTsv(out);
    }

    static Path repoRoot() {
        String configured = System.getProperty("nearstream.repo.root");
        if (configured != null && !configured.isBlank()) {
            return Path.of(configured).toAbsolutePath().normalize();
        }
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            if (Files.exists(dir.resolve("scripts/wordcount_reference.py"))) {
                return dir;
            }
        }
        throw new IllegalStateException(
                "repository root not found: set -Dnearstream.repo.root or run from the repository");
    }
}
