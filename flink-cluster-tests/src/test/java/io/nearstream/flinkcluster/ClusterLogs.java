package io.nearstream.flinkcluster;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * The logs of a cluster directory ({@code DIR/log}, one file per process): their tails for a
 * failure message, and a copy kept after a failure, since the directory itself is removed.
 */
final class ClusterLogs {

    private static final int TAIL_LINES = 60;

    private ClusterLogs() {}

    /** The last lines of every JobManager and TaskManager log and output file. */
    static String tails(Path clusterDir) {
        StringBuilder all = new StringBuilder();
        try (Stream<Path> files = Files.list(clusterDir.resolve("log"))) {
            for (Path f : files.sorted(Comparator.comparing(Path::toString)).toList()) {
                String name = f.getFileName().toString();
                boolean process = name.startsWith("jobmanager") || name.startsWith("taskmanager");
                if (!process || Files.size(f) == 0) {
                    continue;
                }
                List<String> lines = Files.readAllLines(f, StandardCharsets.UTF_8);
                all.append("----- ").append(f).append(" (last ").append(TAIL_LINES);
                all.append(" of ").append(lines.size()).append(" lines)\n");
                lines.subList(Math.max(0, lines.size() - TAIL_LINES), lines.size())
                        .forEach(line -> all.append(line).append('\n'));
            }
        } catch (IOException e) {
            all.append("(cannot read the logs: ").append(e).append(")\n");
        }
        return all.toString();
    }

    /** The tails as an exception to add to a test's failure (no stack trace of its own). */
    static RuntimeException attachment(Path clusterDir) {
        return new Attached(tails(clusterDir));
    }

    private static final class Attached extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Attached(String tails) {
            super(
                    "Flink session cluster logs (all of them are kept under"
                            + " target/flink-cluster-logs when the test class ends):\n"
                            + tails,
                    null,
                    false,
                    false);
        }
    }

    /** Copies the log directory to target/flink-cluster-logs/NAME-TIME (relative to the module). */
    static void keep(Path clusterDir, String name) {
        if (clusterDir == null) {
            return;
        }
        String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"));
        Path target = Path.of("target", "flink-cluster-logs", name + "-" + stamp);
        try (Stream<Path> files = Files.list(clusterDir.resolve("log"))) {
            Files.createDirectories(target);
            for (Path f : files.toList()) {
                Files.copy(f, target.resolve(f.getFileName()));
            }
            System.err.println("Flink cluster logs kept in " + target.toAbsolutePath());
        } catch (IOException e) {
            System.err.println("cannot keep the Flink cluster logs: " + e);
        }
    }
}
