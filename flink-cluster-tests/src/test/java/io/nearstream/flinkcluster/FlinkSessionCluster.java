package io.nearstream.flinkcluster;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.LifecycleMethodExecutionExceptionHandler;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;

/**
 * A real Flink session cluster for a test class: a JobManager and TaskManager JVMs on 127.0.0.1,
 * started by {@code scripts/flink-cluster.sh} (the script users run) in a temporary directory, with
 * job jars submitted the ways users submit them.
 *
 * <pre>{@code
 * @RegisterExtension
 * static final FlinkSessionCluster FLINK =
 *         FlinkSessionCluster.builder().connectorInLib(true).build();
 *
 * @Test
 * void runs() throws Exception {
 *     String job = FLINK.submitRest(jar, "com.example.Job", List.of("--in", "x"));
 *     FLINK.awaitJobState(job, "RUNNING", Duration.ofSeconds(60));
 *     ...
 *     FLINK.cancel(job);
 * }
 * }</pre>
 *
 * <p>Register it in a static field: the cluster starts before the class's tests and stops after
 * them; a JVM shutdown hook stops it too when the test JVM ends first. A test that fails gets the
 * tails of the JobManager's and TaskManagers' logs attached (as a suppressed exception), and the
 * whole log directory is kept under {@code target/flink-cluster-logs}. Job states are Flink's
 * {@code JobStatus} names: {@code CREATED}, {@code RUNNING}, {@code FAILING}, {@code FAILED},
 * {@code CANCELLING}, {@code CANCELED}, {@code FINISHED}, {@code RESTARTING}, ...
 */
public final class FlinkSessionCluster
        implements BeforeAllCallback,
                AfterAllCallback,
                TestExecutionExceptionHandler,
                LifecycleMethodExecutionExceptionHandler {

    private static final Duration SCRIPT_TIMEOUT = Duration.ofMinutes(3);
    private static final Set<String> TERMINAL = Set.of("FAILED", "CANCELED", "FINISHED");

    /** How often {@link #start} picks new ports after one was taken. */
    private static final int PORT_ATTEMPTS = 3;

    private final boolean connectorInLib;
    private final boolean sql;
    private final int taskManagers;
    private final int slotsPerTaskManager;
    private final Map<String, String> configuration;

    private Path dir;
    private ClusterScript script;
    private FlinkRest rest;
    private int restPort;
    private Thread shutdownHook;
    private boolean failed;

    /** Two TaskManagers of two slots, the connector not in lib/. */
    public FlinkSessionCluster() {
        this(builder());
    }

    private FlinkSessionCluster(Builder b) {
        this.connectorInLib = b.connectorInLib;
        this.sql = b.sql;
        this.taskManagers = b.taskManagers;
        this.slotsPerTaskManager = b.slotsPerTaskManager;
        this.configuration = new LinkedHashMap<>(b.configuration);
    }

    public static Builder builder() {
        return new Builder();
    }

    /** How the cluster is set up. */
    public static final class Builder {
        private boolean connectorInLib;
        private boolean sql;
        private int taskManagers = 2;
        private int slotsPerTaskManager = 2;
        private final Map<String, String> configuration = new LinkedHashMap<>();

        private Builder() {}

        /**
         * Puts the Nearstream connector and its runtime dependencies into the cluster's lib/ (the
         * jars this build staged in target/connector-lib), as docs/flink-connector.md tells users
         * to; job jars then leave them out.
         */
        public Builder connectorInLib(boolean inLib) {
            this.connectorInLib = inLib;
            return this;
        }

        /**
         * Sets the cluster up for SQL as a distribution is ({@code flink-cluster.sh start --sql}):
         * the table jars and formats in lib/ with the shaded flink-sql-connector-nearstream jar
         * this build made, the SQL client in opt/ ({@link #runSql}).
         */
        public Builder sql(boolean sql) {
            this.sql = sql;
            return this;
        }

        public Builder taskManagers(int n) {
            this.taskManagers = n;
            return this;
        }

        public Builder slotsPerTaskManager(int n) {
            this.slotsPerTaskManager = n;
            return this;
        }

        /** Any Flink option, e.g. {@code heartbeat.timeout}; overrides the script's defaults. */
        public Builder configure(String key, String value) {
            configuration.put(key, value);
            return this;
        }

        public FlinkSessionCluster build() {
            return new FlinkSessionCluster(this);
        }
    }

    // --- lifecycle ---------------------------------------------------------------------------

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        start();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (failed) {
            ClusterLogs.keep(dir, context.getRequiredTestClass().getSimpleName());
        }
        stop();
    }

    @Override
    public void handleTestExecutionException(ExtensionContext context, Throwable throwable)
            throws Throwable {
        throw withLogs(throwable);
    }

    @Override
    public void handleBeforeEachMethodExecutionException(
            ExtensionContext context, Throwable throwable) throws Throwable {
        throw withLogs(throwable);
    }

    @Override
    public void handleAfterEachMethodExecutionException(
            ExtensionContext context, Throwable throwable) throws Throwable {
        throw withLogs(throwable);
    }

    /** Starts the cluster and waits until every TaskManager has registered; idempotent. */
    public synchronized void start() throws IOException, InterruptedException {
        if (dir != null) {
            return;
        }
        // The ports are free when picked, but another process (an outgoing connection's ephemeral
        // port) may take one before the JobManager binds it: start again on new ports.
        for (int attempt = 1; ; attempt++) {
            try {
                startOnce();
                return;
            } catch (IOException e) {
                if (attempt >= PORT_ATTEMPTS || !portTaken(e)) {
                    throw e;
                }
                System.err.println("A port of the Flink cluster was taken; starting again: " + e);
            }
        }
    }

    private static boolean portTaken(IOException e) {
        String message = String.valueOf(e.getMessage());
        return message.contains("BindException") || message.contains("Address already in use");
    }

    private void startOnce() throws IOException, InterruptedException {
        // Real path: the processes' command lines name it as the script resolves it.
        dir = Files.createTempDirectory("flink-cluster-").toRealPath();
        // Not stop(): that waits for the monitor, which a start in progress holds.
        Path started = dir;
        shutdownHook =
                new Thread(
                        () -> {
                            stopProcesses(started);
                            ClusterDirectory.deleteQuietly(started);
                        },
                        "flink-session-cluster-shutdown");
        Runtime.getRuntime().addShutdownHook(shutdownHook);
        try {
            script = new ClusterScript(dir);
            restPort = freePort();
            int rpcPort = freePort();
            while (rpcPort == restPort) {
                rpcPort = freePort();
            }
            List<String> args = new ArrayList<>();
            args.addAll(List.of("start", "--dir", dir.toString()));
            args.addAll(List.of("--taskmanagers", Integer.toString(taskManagers)));
            args.addAll(List.of("--slots", Integer.toString(slotsPerTaskManager)));
            args.addAll(List.of("--rest-port", Integer.toString(restPort)));
            args.addAll(List.of("--rpc-port", Integer.toString(rpcPort)));
            if (connectorInLib) {
                args.add("--connector-in-lib");
                args.add("--connector-jars");
                args.add(connectorJars().toString());
            }
            if (sql) {
                args.add("--sql");
                args.add("--sql-connector-jar");
                args.add(sqlConnectorJar().toString());
            }
            configuration.forEach((k, v) -> args.addAll(List.of("--set", k + "=" + v)));
            script.run(SCRIPT_TIMEOUT, args);
        } catch (IOException | InterruptedException | RuntimeException e) {
            stop();
            throw e;
        }
        rest = new FlinkRest(restUrl());
    }

    /** Stops every process of the cluster and removes its directory; idempotent. */
    public synchronized void stop() {
        if (dir == null) {
            return;
        }
        try {
            stopProcesses(dir);
        } finally {
            try {
                if (shutdownHook != null) {
                    Runtime.getRuntime().removeShutdownHook(shutdownHook);
                }
            } catch (IllegalStateException shuttingDown) {
                // the hook is running or has run: nothing to remove
            }
            shutdownHook = null;
            Path d = dir;
            dir = null;
            rest = null;
            ClusterDirectory.delete(d);
        }
    }

    /** The script's stop; then, should it have failed, whatever the pid files still name. */
    private static void stopProcesses(Path d) {
        try {
            new ClusterScript(d).run(Duration.ofMinutes(1), List.of("stop", "--dir", d.toString()));
        } catch (IOException | RuntimeException e) {
            System.err.println("flink-cluster stop failed, killing by pid file: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            ClusterDirectory.killProcesses(d);
        }
    }

    // --- the cluster -------------------------------------------------------------------------

    /** {@code http://127.0.0.1:port} of the REST API (and web UI). */
    public String restUrl() {
        requireStarted();
        return "http://127.0.0.1:" + restPort;
    }

    /** The cluster directory (lib/, conf/, log/, pid files). */
    public Path dir() {
        requireStarted();
        return dir;
    }

    /** Submits {@code jar} through the REST API (upload, then run); returns the job id. */
    public String submitRest(Path jar, String mainClass, List<String> args)
            throws IOException, InterruptedException {
        return submit("rest", jar, mainClass, args);
    }

    /** Submits {@code jar} with {@code flink run --detached} (CliFrontend); returns the job id. */
    public String submitCli(Path jar, String mainClass, List<String> args)
            throws IOException, InterruptedException {
        return submit("cli", jar, mainClass, args);
    }

    private String submit(String via, Path jar, String mainClass, List<String> args)
            throws IOException, InterruptedException {
        requireStarted();
        List<String> command = new ArrayList<>();
        command.addAll(List.of("submit", "--dir", dir.toString(), "--via", via));
        command.add(jar.toAbsolutePath().toString());
        if (mainClass != null) {
            command.addAll(List.of("--class", mainClass));
        }
        command.add("--");
        command.addAll(args);
        String[] lines = script.run(SCRIPT_TIMEOUT, command).stdout().strip().split("\n");
        return lines[lines.length - 1].strip();
    }

    /**
     * Runs {@code sqlScript} with Flink's SQL client ({@code flink-cluster.sh sql}) against this
     * cluster, started with {@link Builder#sql}; returns what the client printed, and fails with it
     * when the client exits with an error.
     */
    public String runSql(Path sqlScript, Duration timeout)
            throws IOException, InterruptedException {
        requireStarted();
        ClusterScript.Result result =
                script.run(
                        timeout,
                        List.of("sql", "--dir", dir.toString(), "-f", sqlScript.toString()));
        return result.stdout() + result.stderr();
    }

    /** The job's state now. */
    public String jobState(String jobId) throws IOException, InterruptedException {
        return rest().jobState(jobId);
    }

    /**
     * Waits until the job is in {@code state}; fails at once, with the job's root exception, when
     * it ends in another state, and after {@code timeout}.
     */
    public void awaitJobState(String jobId, String state, Duration timeout)
            throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        String now = jobState(jobId);
        while (!now.equals(state)) {
            if (TERMINAL.contains(now) || System.nanoTime() > deadline) {
                throw new AssertionError(
                        "job "
                                + jobId
                                + " is "
                                + now
                                + ", not "
                                + state
                                + (TERMINAL.contains(now) ? "" : " after " + timeout)
                                + "; root exception:\n"
                                + rest().rootException(jobId));
            }
            Thread.sleep(200);
            now = jobState(jobId);
        }
    }

    /** Cancels the job and waits until it is CANCELED. */
    public void cancel(String jobId) throws IOException, InterruptedException {
        rest().cancel(jobId);
        awaitJobState(jobId, "CANCELED", Duration.ofSeconds(60));
    }

    /** The resource ids of the TaskManagers registered now ({@code tm-1}, ... by default). */
    public List<String> taskManagers() throws IOException, InterruptedException {
        return rest().taskManagers();
    }

    /** The process id of a TaskManager this cluster started, from its pid file. */
    public long taskManagerPid(String resourceId) throws IOException {
        Path pidFile = dir().resolve("taskmanager-" + resourceId + ".pid");
        if (!Files.exists(pidFile)) {
            throw new IllegalArgumentException("no TaskManager " + resourceId + " in " + dir);
        }
        return Long.parseLong(Files.readString(pidFile).strip());
    }

    /**
     * Kills a TaskManager with SIGKILL, a crash as the JobManager sees one, and returns once the
     * process is gone. The JobManager notices after its heartbeat timeout ({@code
     * heartbeat.timeout}, 50 s unless configured).
     */
    public void killTaskManager(String resourceId) throws IOException, InterruptedException {
        requireStarted();
        script.run(
                SCRIPT_TIMEOUT,
                List.of("taskmanager", "kill", resourceId, "--dir", dir.toString()));
    }

    /** Starts a TaskManager with this resource id and waits until it has registered. */
    public void startTaskManager(String resourceId) throws IOException, InterruptedException {
        requireStarted();
        script.run(
                SCRIPT_TIMEOUT,
                List.of("taskmanager", "start", resourceId, "--dir", dir.toString()));
    }

    /**
     * Metrics of a TaskManager, e.g. {@code Status.JVM.Threads.Count}, {@code
     * Status.JVM.Memory.Metaspace.Used}, {@code Status.JVM.ClassLoader.ClassesLoaded}: name to
     * value, for the names it reports.
     */
    public Map<String, String> taskManagerMetrics(String resourceId, String... names)
            throws IOException, InterruptedException {
        return rest().taskManagerMetrics(resourceId, List.of(names));
    }

    /** The JSON answer of a GET on the REST API, e.g. {@code /jobs/<id>/exceptions}. */
    public String restGet(String path) throws IOException, InterruptedException {
        return rest().get(path);
    }

    /** The last lines of every JobManager and TaskManager log and output file. */
    public String logTails() {
        Path d = dir;
        return d == null ? "(the cluster is not running)" : ClusterLogs.tails(d);
    }

    // --- helpers -----------------------------------------------------------------------------

    private Throwable withLogs(Throwable throwable) {
        failed = true;
        if (dir != null && !(throwable instanceof org.opentest4j.TestAbortedException)) {
            throwable.addSuppressed(ClusterLogs.attachment(dir));
        }
        return throwable;
    }

    private FlinkRest rest() {
        requireStarted();
        return rest;
    }

    private void requireStarted() {
        if (dir == null) {
            throw new IllegalStateException("the Flink session cluster is not running");
        }
    }

    private static Path connectorJars() {
        return Repository.buildOutput(
                "nearstream.connector.lib",
                "flink-cluster-tests/target/connector-lib",
                "the connector's jars are staged by `mvn package` of flink-cluster-tests");
    }

    /** The shaded SQL connector jar of this build (module flink-sql-connector-nearstream). */
    private static Path sqlConnectorJar() throws IOException {
        Path target = Repository.file("flink-sql-connector-nearstream/target");
        try (var jars = Files.list(target)) {
            return jars.filter(
                            j -> {
                                String n = j.getFileName().toString();
                                return n.startsWith("flink-sql-connector-nearstream-")
                                        && n.endsWith(".jar")
                                        && !n.endsWith("-tests.jar");
                            })
                    .findFirst()
                    .orElseThrow(
                            () ->
                                    new IOException(
                                            "no shaded SQL connector jar in "
                                                    + target
                                                    + ": `mvn package` of"
                                                    + " flink-sql-connector-nearstream makes it"));
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }
}
