package io.nearstream.testing;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NettyNearstreamClient;
import io.nearstream.client.StreamConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Starts the real {@code nearstreamd} on 127.0.0.1 with a free port and a temporary data directory,
 * and kills it afterwards.
 *
 * <pre>{@code
 * class MyITCase {
 *     @RegisterExtension
 *     static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();
 *
 *     @Test
 *     void reads() {
 *         BROKER.createStream("s", 4);
 *         BROKER.client().metadata("s").join();
 *     }
 * }
 * }</pre>
 *
 * <p>As a static field the broker lives for the test class (one broker for all its tests); as an
 * instance field it is started and stopped around each test. The callbacks do not use their {@link
 * ExtensionContext}; other harnesses call {@link #start()} and {@link #close()} directly. The
 * binary comes from the system property {@code nearstream.broker.binary} (set by the pom). A JVM
 * shutdown hook kills the broker if the test JVM dies before teardown.
 */
public final class NearstreamBrokerExtension
        implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback, AfterEachCallback {

    /** System property naming the broker binary. */
    public static final String BINARY_PROPERTY = "nearstream.broker.binary";

    private static final long START_TIMEOUT_MS = 20_000;

    private final List<String> extraArgs;
    private Path tempDir;
    private Path dataDir;
    private Path logFile;
    private volatile Process process;
    private Thread shutdownHook;
    private int port;
    private NearstreamClient client;
    private boolean startedPerTest;

    /** A broker with {@code --workers 2} and the broker's defaults otherwise. */
    public NearstreamBrokerExtension() {
        this(List.of());
    }

    /** A broker with extra command-line flags, e.g. {@code List.of("--segment-bytes", "65536")}. */
    public NearstreamBrokerExtension(List<String> extraArgs) {
        this.extraArgs = List.copyOf(extraArgs);
    }

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        start();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        close();
    }

    @Override
    public void beforeEach(ExtensionContext context) throws Exception {
        if (tempDir == null) {
            startedPerTest = true;
            start();
        }
    }

    @Override
    public void afterEach(ExtensionContext context) {
        if (startedPerTest) {
            startedPerTest = false;
            close();
        }
    }

    /** {@code 127.0.0.1:port} of the running broker. */
    public String address() {
        return host() + ":" + port();
    }

    public String host() {
        return "127.0.0.1";
    }

    public int port() {
        if (port == 0) {
            throw new IllegalStateException("the broker has not been started");
        }
        return port;
    }

    /**
     * The process id of the running broker; it names the broker's push regions ({@code
     * nearstream-push-<pid>-<subscription>}, docs/shm-layout.md) and changes on {@link #restart()}.
     */
    public synchronized long pid() {
        Process p = process;
        if (p == null) {
            throw new IllegalStateException("the broker is not running");
        }
        return p.pid();
    }

    /** The broker's data directory (survives {@link #restart()}). */
    public Path dataDir() {
        if (dataDir == null) {
            throw new IllegalStateException("the broker has not been started");
        }
        return dataDir;
    }

    /** A client shared by the tests of this extension; closed on teardown. Reconnects lazily. */
    public synchronized NearstreamClient client() {
        if (client == null) {
            client = NettyNearstreamClient.connect(address());
        }
        return client;
    }

    /** Creates a stream with broker defaults and durability none. */
    public void createStream(String name, int streamlets) {
        createStream(StreamConfig.of(name, streamlets));
    }

    /** Creates a stream. */
    public void createStream(StreamConfig config) {
        client().createStream(config).join();
    }

    /** Kills the broker with SIGKILL and starts it again on the same port and data directory. */
    public synchronized void restart() {
        if (tempDir == null) {
            throw new IllegalStateException("the broker has not been started");
        }
        kill();
        try {
            launch(port);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot restart nearstreamd", e);
        }
    }

    /** Kills the broker (SIGKILL); {@link #restart()} brings it back. */
    public synchronized void stop() {
        kill();
    }

    /** The broker's stdout and stderr so far. */
    public String log() {
        try {
            return logFile != null && Files.exists(logFile)
                    ? Files.readString(logFile, StandardCharsets.UTF_8)
                    : "";
        } catch (IOException e) {
            return "(cannot read broker log: " + e + ")";
        }
    }

    /** Starts the broker; for harnesses that manage the lifecycle themselves. */
    public synchronized void start() throws IOException {
        if (tempDir != null) {
            return; // already running (e.g. beforeAll called twice)
        }
        tempDir = Files.createTempDirectory("nearstreamd-");
        dataDir = tempDir.resolve("data");
        Files.createDirectories(dataDir);
        logFile = tempDir.resolve("broker.log");
        launch(0);
    }

    private void launch(int listenPort) throws IOException {
        String binary = System.getProperty(BINARY_PROPERTY);
        if (binary == null || !Files.isExecutable(Paths.get(binary))) {
            throw new IllegalStateException(
                    "nearstreamd not found at "
                            + binary
                            + " (system property "
                            + BINARY_PROPERTY
                            + "); build the native module first: mvn -pl native compile");
        }
        Path portFile = tempDir.resolve("port");
        Files.deleteIfExists(portFile);
        List<String> cmd = new ArrayList<>();
        cmd.add(binary);
        cmd.add("--listen");
        cmd.add("127.0.0.1:" + listenPort);
        cmd.add("--port-file");
        cmd.add(portFile.toString());
        cmd.add("--data-dir");
        cmd.add(dataDir.toString());
        cmd.add("--workers");
        cmd.add("2");
        cmd.addAll(extraArgs);
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.redirectErrorStream(true);
        pb.redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()));
        process = pb.start();
        if (shutdownHook == null) {
            // No lock here: the hook must work even when a test thread is stuck holding one.
            shutdownHook =
                    new Thread(
                            () -> {
                                Process p = process;
                                if (p != null) {
                                    p.destroyForcibly();
                                }
                            },
                            "nearstreamd-killer");
            Runtime.getRuntime().addShutdownHook(shutdownHook);
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(START_TIMEOUT_MS);
        while (true) {
            if (Files.exists(portFile)) {
                String text = Files.readString(portFile, StandardCharsets.US_ASCII).trim();
                if (!text.isEmpty()) {
                    port = Integer.parseInt(text);
                    return;
                }
            }
            if (!process.isAlive()) {
                throw new IllegalStateException(
                        "nearstreamd exited with status "
                                + process.exitValue()
                                + " before listening; its log:\n"
                                + log());
            }
            if (System.nanoTime() > deadline) {
                destroyQuietly();
                throw new IllegalStateException(
                        "nearstreamd did not write its port file within "
                                + START_TIMEOUT_MS
                                + " ms; its log:\n"
                                + log());
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                destroyQuietly();
                throw new IllegalStateException("interrupted while starting nearstreamd", e);
            }
        }
    }

    private void kill() {
        destroyQuietly();
    }

    private synchronized void destroyQuietly() {
        Process p = process;
        if (p == null) {
            return;
        }
        p.destroyForcibly();
        try {
            p.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        process = null;
    }

    /** Kills the broker and removes its files; idempotent. */
    public synchronized void close() {
        try {
            if (client != null) {
                client.close();
                client = null;
            }
        } finally {
            destroyQuietly();
            if (shutdownHook != null) {
                try {
                    Runtime.getRuntime().removeShutdownHook(shutdownHook);
                } catch (IllegalStateException ignored) {
                    // The JVM is shutting down; the hook runs anyway.
                }
                shutdownHook = null;
            }
            deleteRecursively(tempDir);
            tempDir = null;
            dataDir = null;
            port = 0;
        }
    }

    private static void deleteRecursively(Path dir) {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder())
                    .forEach(
                            p -> {
                                try {
                                    Files.deleteIfExists(p);
                                } catch (IOException e) {
                                    throw new UncheckedIOException(e);
                                }
                            });
        } catch (IOException | UncheckedIOException e) {
            // Best effort: a leftover temp dir must not fail the test run.
        }
    }
}
