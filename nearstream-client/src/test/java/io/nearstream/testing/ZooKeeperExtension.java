package io.nearstream.testing;

import io.nearstream.process.ZooKeeperProcess;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Starts a real standalone Apache ZooKeeper server on 127.0.0.1 with a free port and a temporary
 * data directory, and stops it afterwards.
 *
 * <pre>{@code
 * class MyITCase {
 *     @RegisterExtension
 *     static final ZooKeeperExtension ZK = new ZooKeeperExtension();
 *
 *     @Test
 *     void registers() {
 *         String connect = ZK.connectString() + "/nearstream";
 *         ...
 *     }
 * }
 * }</pre>
 *
 * <p>As a static field the server lives for the test class; as an instance field it is started and
 * stopped around each test. The callbacks do not use their {@link ExtensionContext}; other
 * harnesses ({@link NearstreamClusterExtension}) call {@link #start()} and {@link #close()}
 * directly.
 *
 * <p>The process itself is {@link ZooKeeperProcess} ({@code nearstream-broker-process}): its own
 * JVM on the class path that the {@code zookeeper-server} module assembles, found through the
 * system property {@code nearstream.zookeeper.lib} (set by the poms) first. The data directory
 * survives {@link #kill()} and {@link #restart()}, and the port stays the same.
 */
public final class ZooKeeperExtension
        implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback, AfterEachCallback {

    /** System property naming the directory of ZooKeeper's jars. */
    public static final String LIB_PROPERTY = ZooKeeperProcess.LIB_PROPERTY;

    private Path tempDir;
    private ZooKeeperProcess process;
    private boolean startedPerTest;

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

    /** {@code 127.0.0.1:PORT}, a client's connect string (append a chroot, e.g. "/nearstream"). */
    public String connectString() {
        return process().connectString();
    }

    public int port() {
        return process().port();
    }

    /** The process id of the running server; changes on {@link #restart()}. */
    public synchronized long pid() {
        return process().pid();
    }

    /** Whether the server is running (false after {@link #kill()} or {@link #stop()}). */
    public synchronized boolean isAlive() {
        return process != null && process.isAlive();
    }

    /** Where its configuration, data and log live (survives {@link #restart()}). */
    public Path directory() {
        return process().directory();
    }

    /** The server's output so far, of every start since {@link #start()}. */
    public synchronized String log() {
        return process != null ? process.log() : "";
    }

    /** The process, for what this class does not expose. */
    public synchronized ZooKeeperProcess process() {
        if (process == null) {
            throw new IllegalStateException("ZooKeeper has not been started");
        }
        return process;
    }

    /** Kills the server with SIGKILL (a crash); {@link #restart()} brings it back. */
    public synchronized void kill() {
        process().kill();
    }

    /** Stops the server (SIGTERM, then SIGKILL); {@link #restart()} brings it back. */
    public synchronized void stop() {
        process().stop();
    }

    /**
     * Starts the server again on the same port and data directory, stopping it first if it runs,
     * and waits until it answers.
     */
    public synchronized void restart() {
        try {
            process().restart();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot restart ZooKeeper", e);
        }
    }

    /** Starts the server; for harnesses that manage the lifecycle themselves. */
    public synchronized void start() throws IOException {
        if (tempDir != null) {
            return; // already running (e.g. beforeAll called twice)
        }
        tempDir = Files.createTempDirectory("nearstream-zookeeper-");
        try {
            process = ZooKeeperProcess.start(tempDir, 0);
        } catch (IOException | RuntimeException e) {
            close();
            throw e;
        }
    }

    /** Stops the server and removes its files; idempotent. */
    public synchronized void close() {
        try {
            if (process != null) {
                process.close();
            }
        } finally {
            process = null;
            ZooKeeperProcess.deleteRecursively(tempDir);
            tempDir = null;
        }
    }
}
