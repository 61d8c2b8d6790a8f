package io.nearstream.process;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A {@code nearstreamd} started from Java: on 127.0.0.1 with a free (or a given) port, read back
 * from {@code --port-file}, its output in a log file; {@link #start} returns once the broker
 * listens.
 *
 * <p>This is the one implementation in the repository of "start nearstreamd and wait until it
 * listens". The benchmark runner ({@code benchmarks/}) starts the brokers of real runs with it, and
 * the Java test kit, {@code io.nearstream.testing.NearstreamBrokerExtension} (the test-jar of
 * {@code nearstream-client}), is built on it. It lives in a main artifact of its own, with nothing
 * but the JDK on its class path: the benchmarks need it at run time, so it cannot live in a
 * test-jar (that would put test classes in the benchmarks jar, and {@code -Dmaven.test.skip} would
 * break their build), and the client jar ships only what a client does.
 *
 * <p>The binary is, in this order: the system property {@value #BINARY_PROPERTY}, the environment
 * variable {@value #BINARY_ENV}, or {@value #DEFAULT_RELATIVE_PATH} in the working directory or one
 * of its parents (so both the repository root and a module directory work). {@link
 * #start(String...)} takes the number of broker worker threads from the system property {@value
 * #WORKERS_PROPERTY} (default 2).
 *
 * <p>A JVM shutdown hook kills the broker if the JVM exits before {@link #close()} or {@link
 * #kill()}.
 */
public final class BrokerProcess implements AutoCloseable {

    public static final String BINARY_PROPERTY = "nearstream.broker.binary";
    public static final String BINARY_ENV = "NEARSTREAM_BROKER_BINARY";
    public static final String WORKERS_PROPERTY = "nearstream.bench.broker.workers";
    public static final String DEFAULT_RELATIVE_PATH = "native/build/default/nearstreamd";

    /** The file in the broker's directory that receives its stdout and stderr (appended). */
    public static final String LOG_FILE = "broker.log";

    private static final String PORT_FILE = "port";
    private static final long START_TIMEOUT_MS = 20_000;
    private static final long STOP_GRACE_MS = 5_000;

    private final Path dir;
    private final boolean ownsDir;
    private final Path logFile;
    private final Process process;
    private final Thread shutdownHook;
    private final int port;
    private final AtomicBoolean stopped = new AtomicBoolean();

    private BrokerProcess(
            Path dir, boolean ownsDir, Path logFile, Process process, Thread hook, int port) {
        this.dir = dir;
        this.ownsDir = ownsDir;
        this.logFile = logFile;
        this.process = process;
        this.shutdownHook = hook;
        this.port = port;
    }

    /**
     * Starts a memory-only broker (no {@code --data-dir}) with {@code --workers} from {@value
     * #WORKERS_PROPERTY} (default 2) in a temporary directory that {@link #close()} removes.
     */
    public static BrokerProcess start(String... extraArgs) throws IOException {
        return start(Integer.getInteger(WORKERS_PROPERTY, 2), extraArgs);
    }

    /**
     * Starts a broker with {@code workers} worker threads and extra command-line flags, in a
     * temporary directory that {@link #close()} removes.
     */
    public static BrokerProcess start(int workers, String... extraArgs) throws IOException {
        Path dir = Files.createTempDirectory("nearstreamd-");
        try {
            return launch(dir, true, 0, withWorkers(workers, List.of(extraArgs)));
        } catch (IOException | RuntimeException e) {
            deleteRecursively(dir);
            throw e;
        }
    }

    /**
     * Starts a broker whose port file and log ({@value #LOG_FILE}, appended to) are in {@code dir},
     * which the caller owns and which outlives the process: a broker restarted in the same
     * directory adds to the same log. {@code listenPort} 0 lets the broker pick a free port; a
     * restart passes the previous {@link #port()} to come back where its clients expect it.
     */
    public static BrokerProcess start(Path dir, int listenPort, int workers, List<String> extraArgs)
            throws IOException {
        return launch(dir, false, listenPort, withWorkers(workers, extraArgs));
    }

    private static List<String> withWorkers(int workers, List<String> extraArgs) {
        List<String> args = new ArrayList<>();
        args.add("--workers");
        args.add(Integer.toString(workers));
        args.addAll(extraArgs);
        return args;
    }

    private static BrokerProcess launch(
            Path dir, boolean ownsDir, int listenPort, List<String> args) throws IOException {
        Path binary = binary();
        Path portFile = dir.resolve(PORT_FILE);
        Path logFile = dir.resolve(LOG_FILE);
        Files.deleteIfExists(portFile);
        List<String> cmd = new ArrayList<>();
        cmd.add(binary.toString());
        cmd.add("--listen");
        cmd.add("127.0.0.1:" + listenPort);
        cmd.add("--port-file");
        cmd.add(portFile.toString());
        cmd.addAll(args);
        Process process = ChildProcesses.launch(cmd, logFile);
        Thread hook = new Thread(process::destroyForcibly, "nearstreamd-killer");
        Runtime.getRuntime().addShutdownHook(hook);

        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(START_TIMEOUT_MS);
        try {
            while (true) {
                if (Files.exists(portFile)) {
                    String text = Files.readString(portFile, StandardCharsets.US_ASCII).trim();
                    if (!text.isEmpty()) {
                        return new BrokerProcess(
                                dir, ownsDir, logFile, process, hook, Integer.parseInt(text));
                    }
                }
                if (!process.isAlive()) {
                    throw new IllegalStateException(
                            "nearstreamd exited with status "
                                    + process.exitValue()
                                    + " before listening: "
                                    + String.join(" ", cmd)
                                    + "\n"
                                    + ChildProcesses.readLog(logFile));
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(
                            "nearstreamd did not write its port file within "
                                    + START_TIMEOUT_MS
                                    + " ms: "
                                    + String.join(" ", cmd)
                                    + "\n"
                                    + ChildProcesses.readLog(logFile));
                }
                Thread.sleep(5);
            }
        } catch (IOException | RuntimeException | InterruptedException e) {
            process.destroyForcibly();
            ChildProcesses.removeShutdownHook(hook);
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while starting nearstreamd", e);
            }
            if (e instanceof IOException io) {
                throw io;
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
                        "nearstreamd not found or not executable at "
                                + p.toAbsolutePath()
                                + " (set by -D"
                                + BINARY_PROPERTY
                                + " or "
                                + BINARY_ENV
                                + "); build the native module first: mvn -pl native compile");
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

    /** The process id (for CPU accounting from /proc, and the names of its push regions). */
    public long pid() {
        return process.pid();
    }

    /** Where its port file and log live (removed by {@link #close()} if the broker made it). */
    public Path directory() {
        return dir;
    }

    /** Whether the process is still running. */
    public boolean isAlive() {
        return process.isAlive();
    }

    /** The broker's output so far (in a caller's directory: of every broker started there). */
    public String log() {
        return ChildProcesses.readLog(logFile);
    }

    /**
     * Kills the broker with SIGKILL, as a crash would, and waits for it to exit; leaves its
     * directory. Idempotent; {@link #close()} afterwards only removes an owned directory.
     */
    public void kill() {
        if (stopped.compareAndSet(false, true)) {
            try {
                ChildProcesses.stop(process, Duration.ZERO); // SIGKILL, and wait for the exit
            } finally {
                ChildProcesses.removeShutdownHook(shutdownHook);
            }
        }
    }

    /**
     * Stops the broker (SIGTERM, then SIGKILL after 5 s) and removes its directory if {@link
     * #start(int, String...)} made it. Idempotent.
     */
    @Override
    public void close() {
        try {
            if (stopped.compareAndSet(false, true)) {
                try {
                    ChildProcesses.stop(process, Duration.ofMillis(STOP_GRACE_MS));
                } finally {
                    ChildProcesses.removeShutdownHook(shutdownHook);
                }
            }
        } finally {
            if (ownsDir) {
                deleteRecursively(dir);
            }
        }
    }

    /** Deletes a directory tree, best effort (see {@link ChildProcesses#deleteRecursively}). */
    public static void deleteRecursively(Path dir) {
        ChildProcesses.deleteRecursively(dir);
    }
}
