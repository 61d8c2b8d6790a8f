package io.nearstream.testing;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NettyNearstreamClient;
import io.nearstream.client.StreamConfig;
import io.nearstream.process.BrokerProcess;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Starts the real {@code nearstreamd} on 127.0.0.1 with a free port and a temporary data directory,
 * and stops it afterwards.
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
 * ExtensionContext}; other harnesses call {@link #start()} and {@link #close()} directly.
 *
 * <p>The process itself is {@link BrokerProcess} ({@code nearstream-broker-process}), the one
 * implementation in the repository of "start nearstreamd and wait until it listens", which the
 * benchmark runner uses too; this class adds the test lifecycle, a data directory that survives
 * {@link #restart()}, and a shared client. The binary is found as {@link BrokerProcess#binary()}
 * says: the system property {@code nearstream.broker.binary} (set by the poms) first. A JVM
 * shutdown hook kills the broker if the test JVM dies before teardown.
 */
public final class NearstreamBrokerExtension
        implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback, AfterEachCallback {

    /** System property naming the broker binary. */
    public static final String BINARY_PROPERTY = BrokerProcess.BINARY_PROPERTY;

    private static final int WORKERS = 2;

    private final List<String> extraArgs;
    private Path tempDir;
    private Path dataDir;
    private BrokerProcess process;
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
        BrokerProcess p = process;
        if (p == null || !p.isAlive()) {
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

    /** The broker's stdout and stderr so far, of every start since {@link #start()}. */
    public synchronized String log() {
        return process != null ? process.log() : "";
    }

    /** Starts the broker; for harnesses that manage the lifecycle themselves. */
    public synchronized void start() throws IOException {
        if (tempDir != null) {
            return; // already running (e.g. beforeAll called twice)
        }
        tempDir = Files.createTempDirectory("nearstreamd-");
        dataDir = Files.createDirectories(tempDir.resolve("data"));
        try {
            launch(0);
        } catch (IOException | RuntimeException e) {
            close();
            throw e;
        }
    }

    private void launch(int listenPort) throws IOException {
        List<String> args = new ArrayList<>();
        args.add("--data-dir");
        args.add(dataDir.toString());
        args.addAll(extraArgs);
        process = BrokerProcess.start(tempDir, listenPort, WORKERS, args);
        port = process.port();
    }

    private void kill() {
        if (process != null) {
            process.kill();
        }
    }

    /**
     * Stops the broker (SIGTERM, so it unlinks its push regions and segment files from /dev/shm;
     * SIGKILL if it does not exit within 5 s) and removes its files; idempotent.
     */
    public synchronized void close() {
        try {
            if (client != null) {
                client.close();
                client = null;
            }
        } finally {
            if (process != null) {
                process.close();
            }
            process = null;
            BrokerProcess.deleteRecursively(tempDir);
            tempDir = null;
            dataDir = null;
            port = 0;
        }
    }
}
