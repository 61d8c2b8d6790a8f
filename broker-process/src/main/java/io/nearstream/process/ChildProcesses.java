package io.nearstream.process;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The plumbing every server the tests and benchmarks start as a child process needs, in one place:
 * nearstreamd ({@link BrokerProcess}), ZooKeeper ({@link ZooKeeperProcess}) and the Kafka
 * baseline's broker JVM share it. Start with the output appended to a log file, stop gracefully
 * then by force, read the log for an error message, remove a working directory.
 */
public final class ChildProcesses {

    private ChildProcesses() {}

    /** Starts {@code cmd} with stdout and stderr appended to {@code logFile} and no stdin. */
    public static Process launch(List<String> cmd, Path logFile) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.redirectErrorStream(true);
        pb.redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()));
        pb.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        return pb.start();
    }

    /**
     * Asks {@code process} to stop (SIGTERM), waits up to {@code grace} (zero: not at all), then
     * kills it (SIGKILL) and waits up to 10 s for that. Null or exited processes are left alone.
     */
    public static void stop(Process process, Duration grace) {
        if (process == null || !process.isAlive()) {
            return;
        }
        try {
            if (!grace.isZero()) {
                process.destroy();
                if (process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
                    return;
                }
            }
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    /** Removes a shutdown hook unless the JVM is already shutting down (then the hook runs). */
    public static void removeShutdownHook(Thread hook) {
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException ignored) {
            // The JVM is shutting down; the hook runs anyway.
        }
    }

    /** The log so far, for an error message; a note instead when it cannot be read. */
    public static String readLog(Path logFile) {
        try {
            return Files.exists(logFile) ? Files.readString(logFile, StandardCharsets.UTF_8) : "";
        } catch (IOException e) {
            return "(cannot read " + logFile + ": " + e + ")";
        }
    }

    /** Deletes a directory tree, best effort: a leftover temporary file must not fail a run. */
    public static void deleteRecursively(Path dir) {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // best effort
        }
    }
}
