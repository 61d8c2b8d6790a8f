package io.nearstream.process;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A {@code nearstreamd} started for a benchmark trial: on 127.0.0.1 with a free port (read back
 * from {@code --port-file}), memory-only streams, its output in a temporary log file.
 *
 * <p>The binary is, in this order: the system property {@value #BINARY_PROPERTY}, the environment
 * variable {@value #BINARY_ENV}, or {@value #DEFAULT_RELATIVE_PATH} in the working directory or one
 * of its parents (so both the repository root and {@code benchmarks/} work). The number of broker
 * worker threads is the system property {@value #WORKERS_PROPERTY} (default 2).
 */
public final class BrokerProcess implements AutoCloseable {

    public static final String BINARY_PROPERTY = "nearstream.broker.binary";
    public static final String BINARY_ENV = "NEARSTREAM_BROKER_BINARY";
    public static final String WORKERS_PROPERTY = "nearstream.bench.broker.workers";
    public static final String DEFAULT_RELATIVE_PATH = "native/build/default/nearstreamd";

    private static final long START_TIMEOUT_MS = 20_000;

    private final Path tempDir;
    private final Path logFile;
    private final Process process;
    private final Thread shutdownHook;
    private final int port;

    private BrokerProcess(Path tempDir, Path logFile, Process process, Thread hook, int port) {
        this.tempDir = tempDir;
        this.logFile = logFile;
        this.process = process;
        this.shutdownHook = hook;
        this.port = port;
    }

    /** Starts the broker with {@code --workers} from {@value #WORKERS_PROPERTY} (default 2). */
    public static BrokerProcess start(String... extraArgs) throws IOException {
        return start(Integer.getInteger(WORKERS_PROPERTY, 2), extraArgs);
    }

    /** Starts the broker with {@code workers} worker threads and extra command-line flags. */
    public static BrokerProcess start(int workers, String... extraArgs) throws IOException {
        Path binary = binary();
        Path tempDir = Files.createTempDirectory("nearstream-bench-");
        Path portFile = tempDir.resolve("port");
        Path logFile = tempDir.resolve("broker.log");
        List<String> cmd = new ArrayList<>();
        cmd.add(binary.toString());
        cmd.add("--listen");
        cmd.add("127.0.0.1:0");
        cmd.add("--port-file");
        cmd.add(portFile.toString());
        cmd.add("--workers");
        cmd.add(Integer.toString(workers));
        cmd.addAll(List.of(extraArgs));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.redirectErrorStream(true);
        pb.redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()));
        Process process = pb.start();
        Thread hook = new Thread(process::destroyForcibly, "nearstreamd-killer");
        Runtime.getRuntime().addShutdownHook(hook);

        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(START_TIMEOUT_MS);
        try {
            while (true) {
                if (Files.exists(portFile)) {
                    String text = Files.readString(portFile, StandardCharsets.US_ASCII).trim();
                    if (!text.isEmpty()) {
                        return new BrokerProcess(
                                tempDir, logFile, process, hook, Integer.parseInt(text));
                    }
                }
                if (!process.isAlive()) {
                    throw new IllegalStateException(
                            "nearstreamd exited with status "
                                    + process.exitValue()
                                    + " before listening: "
                                    + String.join(" ", cmd)
                                    + "\n"
                                    + readLog(logFile));
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(
                            "nearstreamd did not write its port file within "
                                    + START_TIMEOUT_MS
                                    + " ms\n"
                                    + readLog(logFile));
                }
                Thread.sleep(5);
            }
        } catch (RuntimeException | InterruptedException e) {
            process.destroyForcibly();
            Runtime.getRuntime().removeShutdownHook(hook);
            deleteRecursively(tempDir);
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while starting nearstreamd", e);
            }
            throw (RuntimeException) e;
        }
    }

    /** The broker binary to run (see the class comment). */
    public static Path binary() {
        String configured = System.getProperty(BINARY_PROPERTY);
        if (configured == null || configured.isBlank()) {
            configured = System.getenv(BINARY_ENV);
        }
        if (configured != null && !configured.isBlank()) {
            Path p = Paths.get(configured);
            if (!Files.isExecutable(p)) {
                throw new IllegalStateException(
                        "nearstreamd not found or not executable at " + p.toAbsolutePath());
            }
            return p;
        }
        for (Path dir = Paths.get("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolve(DEFAULT_RELATIVE_PATH);
            if (Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        throw new IllegalStateException(
                "nearstreamd not found: set -D"
                        + BINARY_PROPERTY
                        + "=PATH or "
                        + BINARY_ENV
                        + ", or run from the repository after `mvn -pl native compile` (looked for "
                        + DEFAULT_RELATIVE_PATH
                        + " in "
                        + Paths.get("").toAbsolutePath()
                        + " and its parents)");
    }

    /** {@code 127.0.0.1:port}. */
    public String address() {
        return "127.0.0.1:" + port;
    }

    public int port() {
        return port;
    }

    /** The process id (for CPU accounting from /proc). */
    public long pid() {
        return process.pid();
    }

    /** The broker's output so far. */
    public String log() {
        return readLog(logFile);
    }

    /** Stops the broker (SIGTERM, then SIGKILL after 5 s) and removes its temporary files. */
    @Override
    public void close() {
        try {
            process.destroy();
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        } finally {
            try {
                Runtime.getRuntime().removeShutdownHook(shutdownHook);
            } catch (IllegalStateException ignored) {
                // The JVM is shutting down; the hook runs anyway.
            }
            deleteRecursively(tempDir);
        }
    }

    private static String readLog(Path logFile) {
        try {
            return Files.exists(logFile) ? Files.readString(logFile, StandardCharsets.UTF_8) : "";
        } catch (IOException e) {
            return "(cannot read broker log: " + e + ")";
        }
    }

    private static void deleteRecursively(Path dir) {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // Best effort: a leftover temp dir must not fail the benchmark.
        }
    }
}
