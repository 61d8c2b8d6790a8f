package io.nearstream.process;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A standalone Apache ZooKeeper server started from Java, in a JVM of its own: {@code java -cp
 * LIB/* org.apache.zookeeper.server.ZooKeeperServerMain zoo.cfg}, on 127.0.0.1 with a free (or a
 * given) client port, its data and output in a directory; {@link #start} returns once the server
 * answers {@code ruok} with {@code imok} and {@code srvr} with its mode (it serves requests). The
 * brokers register in it ({@code nearstreamd --zookeeper 127.0.0.1:PORT/nearstream}); the Java test
 * kit ({@code io.nearstream.testing.ZooKeeperExtension}, {@code NearstreamClusterExtension}) is
 * built on it.
 *
 * <p>The class path LIB is, in this order: the system property {@value #LIB_PROPERTY} (set by the
 * poms), the environment variable {@value #LIB_ENV}, or {@value #DEFAULT_RELATIVE_PATH} in the
 * working directory or one of its parents (built by {@code mvn -pl zookeeper-server package}).
 *
 * <p>The directory holds {@value #CONFIG_FILE} (rewritten at every start), {@code data/} (the
 * snapshots and transaction log, kept across {@link #restart()}) and {@value #LOG_FILE} (appended
 * to). The configuration: {@code tickTime} {@value #TICK_TIME_MS} ms (so sessions of 1 to 10 s), no
 * admin server, the four-letter words {@code ruok}, {@code srvr} and {@code conf}, {@code
 * forceSync=no} (the page cache survives {@link #kill()}: only the process dies, not the machine),
 * plus whatever the caller adds.
 *
 * <p>A JVM shutdown hook kills the server if the JVM exits before {@link #close()}, {@link #stop()}
 * or {@link #kill()}.
 */
public final class ZooKeeperProcess implements AutoCloseable {

    public static final String LIB_PROPERTY = "nearstream.zookeeper.lib";
    public static final String LIB_ENV = "NEARSTREAM_ZOOKEEPER_LIB";
    public static final String DEFAULT_RELATIVE_PATH = "zookeeper-server/target/lib";

    /** The file in the directory that receives the server's stdout and stderr (appended). */
    public static final String LOG_FILE = "zookeeper.log";

    public static final String CONFIG_FILE = "zoo.cfg";
    public static final int TICK_TIME_MS = 500;

    private static final String SERVER_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain";
    private static final long START_TIMEOUT_MS = 30_000;
    private static final Duration STOP_GRACE = Duration.ofSeconds(5);
    private static final int PROBE_TIMEOUT_MS = 1_000;
    private static final int START_ATTEMPTS = 3;
    private static final int LOG_TAIL_LINES = 60;

    private final Path dir;
    private final boolean ownsDir;
    private final Path lib;
    private final Map<String, String> extraConfig;
    private int port;
    private Process process;
    private Thread shutdownHook;
    private boolean closed;

    private ZooKeeperProcess(
            Path dir, boolean ownsDir, Path lib, Map<String, String> extraConfig, int port) {
        this.dir = dir;
        this.ownsDir = ownsDir;
        this.lib = lib;
        this.extraConfig = extraConfig;
        this.port = port;
    }

    /** Starts a server on a free port in a temporary directory that {@link #close()} removes. */
    public static ZooKeeperProcess start() throws IOException {
        Path dir = Files.createTempDirectory("nearstream-zookeeper-");
        try {
            return start(dir, true, 0, Map.of());
        } catch (IOException | RuntimeException e) {
            ChildProcesses.deleteRecursively(dir);
            throw e;
        }
    }

    /**
     * Starts a server whose configuration, data and log are in {@code dir}, which the caller owns
     * and which outlives the process. {@code clientPort} 0 picks a free port.
     */
    public static ZooKeeperProcess start(Path dir, int clientPort) throws IOException {
        return start(dir, clientPort, Map.of());
    }

    /**
     * As {@link #start(Path, int)}, with more {@code zoo.cfg} entries (they override the defaults,
     * e.g. {@code maxSessionTimeout}).
     */
    public static ZooKeeperProcess start(Path dir, int clientPort, Map<String, String> extraConfig)
            throws IOException {
        return start(dir, false, clientPort, extraConfig);
    }

    private static ZooKeeperProcess start(
            Path dir, boolean ownsDir, int clientPort, Map<String, String> extraConfig)
            throws IOException {
        Files.createDirectories(dir);
        ZooKeeperProcess zk =
                new ZooKeeperProcess(
                        dir.toAbsolutePath(), ownsDir, lib(), Map.copyOf(extraConfig), clientPort);
        for (int attempt = 1; ; attempt++) {
            if (clientPort == 0) {
                zk.port = freePort();
            }
            try {
                zk.launch();
                return zk;
            } catch (PortTakenException e) {
                // The free port was picked before ZooKeeper bound it; something else got it.
                if (clientPort != 0 || attempt == START_ATTEMPTS) {
                    throw new IllegalStateException(e.getMessage(), e);
                }
            }
        }
    }

    /** The directory holding ZooKeeper's class path (see the class comment). */
    public static Path lib() {
        String configured = System.getProperty(LIB_PROPERTY);
        if (configured == null || configured.isBlank()) {
            configured = System.getenv(LIB_ENV);
        }
        if (configured != null && !configured.isBlank()) {
            Path p = Paths.get(configured);
            if (!hasServerJar(p)) {
                throw new IllegalStateException(
                        "no ZooKeeper server jar (zookeeper-<version>.jar) in "
                                + p.toAbsolutePath()
                                + ", set by -D"
                                + LIB_PROPERTY
                                + " or "
                                + LIB_ENV
                                + "; build it: mvn -pl zookeeper-server package");
            }
            return p;
        }
        for (Path d = Paths.get("").toAbsolutePath(); d != null; d = d.getParent()) {
            Path candidate = d.resolve(DEFAULT_RELATIVE_PATH);
            if (hasServerJar(candidate)) {
                return candidate;
            }
        }
        throw new IllegalStateException(
                "ZooKeeper server libraries not found: run `mvn -pl zookeeper-server package` in"
                        + " the repository, or set -D"
                        + LIB_PROPERTY
                        + "=DIR or "
                        + LIB_ENV
                        + " (looked for "
                        + DEFAULT_RELATIVE_PATH
                        + " in "
                        + Paths.get("").toAbsolutePath()
                        + " and its parents)");
    }

    /** {@code 127.0.0.1:PORT}, a ZooKeeper client's connect string (append a chroot path). */
    public String connectString() {
        return "127.0.0.1:" + port;
    }

    /** The client port; it stays the same across {@link #restart()}. */
    public int port() {
        return port;
    }

    /** The process id of the running server; it changes on {@link #restart()}. */
    public synchronized long pid() {
        if (process == null || !process.isAlive()) {
            throw new IllegalStateException("ZooKeeper is not running");
        }
        return process.pid();
    }

    /** Whether the server process is running. */
    public synchronized boolean isAlive() {
        return process != null && process.isAlive();
    }

    /** Where {@value #CONFIG_FILE}, {@code data/} and {@value #LOG_FILE} live. */
    public Path directory() {
        return dir;
    }

    /** The server's output so far, of every start in this directory. */
    public String log() {
        return ChildProcesses.readLog(dir.resolve(LOG_FILE));
    }

    /**
     * Stops the server (SIGTERM, then SIGKILL after 5 s) and waits for it to exit; keeps the
     * directory, so {@link #restart()} brings the same data back. Idempotent.
     */
    public synchronized void stop() {
        terminate(STOP_GRACE);
    }

    /** Kills the server with SIGKILL, as a crash would, and waits for it to exit. Idempotent. */
    public synchronized void kill() {
        terminate(Duration.ZERO);
    }

    /**
     * Starts the server again on the same port and data directory (stopping it first if it still
     * runs) and waits until it answers {@code ruok} and serves.
     */
    public synchronized void restart() throws IOException {
        if (closed) {
            throw new IllegalStateException("ZooKeeper has been closed");
        }
        stop();
        try {
            launch();
        } catch (PortTakenException e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
    }

    /**
     * Stops the server (as {@link #stop()}) and removes the directory if {@link #start()} made it.
     * Idempotent.
     */
    @Override
    public synchronized void close() {
        try {
            stop();
        } finally {
            closed = true;
            if (ownsDir) {
                ChildProcesses.deleteRecursively(dir);
            }
        }
    }

    /** Deletes a directory tree, best effort (see {@link ChildProcesses#deleteRecursively}). */
    public static void deleteRecursively(Path dir) {
        ChildProcesses.deleteRecursively(dir);
    }

    @Override
    public String toString() {
        return "ZooKeeperProcess{" + connectString() + ", " + dir + "}";
    }

    private void terminate(Duration grace) {
        if (process == null) {
            return;
        }
        try {
            ChildProcesses.stop(process, grace);
        } finally {
            ChildProcesses.removeShutdownHook(shutdownHook);
            process = null;
            shutdownHook = null;
        }
    }

    private void launch() throws IOException {
        Path dataDir = Files.createDirectories(dir.resolve("data"));
        Path config = dir.resolve(CONFIG_FILE);
        Path logFile = dir.resolve(LOG_FILE);
        Files.writeString(config, config(dataDir), StandardCharsets.UTF_8);
        List<String> cmd = new ArrayList<>();
        cmd.add(javaExecutable());
        cmd.addAll(
                List.of(
                        "-Xmx256m",
                        "-Djava.awt.headless=true",
                        "-Dorg.slf4j.simpleLogger.showDateTime=true",
                        "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
                        "-cp",
                        lib.toAbsolutePath() + "/*",
                        SERVER_MAIN,
                        config.toString()));
        long logStart = Files.exists(logFile) ? Files.size(logFile) : 0;
        Process started = ChildProcesses.launch(cmd, logFile);
        Thread hook = new Thread(started::destroyForcibly, "zookeeper-killer");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            awaitReady(started, cmd, dataDir, logFile, logStart);
        } catch (RuntimeException e) {
            ChildProcesses.stop(started, Duration.ZERO);
            ChildProcesses.removeShutdownHook(hook);
            throw e;
        }
        process = started;
        shutdownHook = hook;
    }

    private String config(Path dataDir) {
        Map<String, String> cfg = new LinkedHashMap<>();
        cfg.put("tickTime", Integer.toString(TICK_TIME_MS));
        cfg.put("dataDir", dataDir.toString());
        cfg.put("clientPortAddress", "127.0.0.1");
        cfg.put("clientPort", Integer.toString(port));
        cfg.put("admin.enableServer", "false");
        cfg.put("4lw.commands.whitelist", "ruok,srvr,conf");
        cfg.put("forceSync", "no");
        cfg.putAll(extraConfig);
        StringBuilder sb = new StringBuilder();
        cfg.forEach((k, v) -> sb.append(k).append('=').append(v).append('\n'));
        return sb.toString();
    }

    private void awaitReady(
            Process server, List<String> cmd, Path dataDir, Path logFile, long logStart) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(START_TIMEOUT_MS);
        while (true) {
            if (!server.isAlive()) {
                String log = newOutput(logFile, logStart);
                String message =
                        "ZooKeeper exited with status "
                                + server.exitValue()
                                + " before answering on port "
                                + port
                                + ": "
                                + String.join(" ", cmd)
                                + "\nthe end of its output ("
                                + logFile
                                + "):\n"
                                + tail(log);
                if (log.contains("Address already in use")) {
                    throw new PortTakenException(message);
                }
                throw new IllegalStateException(message);
            }
            try {
                // ruok says imok as soon as the process listens; srvr says whether it serves
                // (before it has loaded its data: "not currently serving requests"); conf names
                // the data directory, so another server on the port cannot pass for this one
                // while this one is still on its way to failing to bind.
                if ("imok".equals(fourLetterWord(port, "ruok"))
                        && fourLetterWord(port, "srvr").contains("Mode: ")
                        && fourLetterWord(port, "conf").contains("dataDir=" + dataDir + "/")) {
                    return;
                }
            } catch (IOException e) {
                // not listening yet
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(
                        "ZooKeeper did not answer ruok and serve on port "
                                + port
                                + " within "
                                + START_TIMEOUT_MS
                                + " ms: "
                                + String.join(" ", cmd)
                                + "\nthe end of its output ("
                                + logFile
                                + "):\n"
                                + tail(newOutput(logFile, logStart)));
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while starting ZooKeeper", e);
            }
        }
    }

    /** Sends a four-letter word to 127.0.0.1:port and returns the whole answer, trimmed. */
    private static String fourLetterWord(int port, String word) throws IOException {
        try (Socket socket = new Socket()) {
            socket.connect(
                    new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port),
                    PROBE_TIMEOUT_MS);
            socket.setSoTimeout(PROBE_TIMEOUT_MS);
            OutputStream out = socket.getOutputStream();
            out.write(word.getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            ByteArrayOutputStream answer = new ByteArrayOutputStream();
            in.transferTo(answer);
            return answer.toString(StandardCharsets.US_ASCII).trim();
        }
    }

    private static String newOutput(Path logFile, long from) {
        String log = ChildProcesses.readLog(logFile);
        // Bytes and chars differ only past ASCII; good enough to skip earlier starts' output.
        return from > 0 && from <= log.length() ? log.substring((int) from) : log;
    }

    private static String tail(String log) {
        String[] lines = log.split("\n", -1);
        int from = Math.max(0, lines.length - LOG_TAIL_LINES);
        return String.join("\n", List.of(lines).subList(from, lines.length));
    }

    private static String javaExecutable() {
        Path java = Paths.get(System.getProperty("java.home"), "bin", "java");
        if (Files.isExecutable(java)) {
            return java.toString();
        }
        Optional<String> current = ProcessHandle.current().info().command();
        return current.orElse("java");
    }

    private static boolean hasServerJar(Path dir) {
        if (!Files.isDirectory(dir)) {
            return false;
        }
        try (Stream<Path> files = Files.list(dir)) {
            return files.anyMatch(
                    f -> f.getFileName().toString().matches("zookeeper-[0-9][^/]*\\.jar"));
        } catch (IOException e) {
            return false;
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            return s.getLocalPort();
        }
    }

    /** The port was taken between picking it and ZooKeeper binding it; try another. */
    private static final class PortTakenException extends RuntimeException {
        PortTakenException(String message) {
            super(message);
        }
    }
}
