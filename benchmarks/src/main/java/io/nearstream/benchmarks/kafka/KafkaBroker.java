package io.nearstream.benchmarks.kafka;

import io.nearstream.process.ChildProcesses;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;

/**
 * An Apache Kafka node started for a benchmark or test: KRaft mode, one process that is broker and
 * controller, on 127.0.0.1 with free ports, its data in a temporary directory. It runs in a JVM of
 * its own ({@code java} from {@code java.home}, heap {@value #DEFAULT_HEAP} unless {@value
 * #HEAP_PROPERTY} says otherwise) on the class path that the {@code kafka-server} module assembles
 * from Maven Central, so Kafka's Scala and Jackson never meet Flink's, and its CPU time can be read
 * from {@code /proc/<pid>/stat} ({@link #cpuSeconds()}).
 *
 * <p>The class path is, in this order: the system property {@value #LIBS_PROPERTY}, the environment
 * variable {@value #LIBS_ENV}, or {@value #DEFAULT_RELATIVE_PATH} in the working directory or one
 * of its parents (built by {@code mvn -pl kafka-server package}).
 *
 * <pre>{@code
 * try (KafkaBroker kafka = KafkaBroker.start()) {
 *     kafka.createTopic("bench", 4);
 *     KafkaSource<byte[]> source = KafkaSources.bounded(kafka.bootstrapServers(), "bench");
 *     ...
 * }
 * }</pre>
 *
 * <p>{@link #close()} stops the process and deletes its directory; a shutdown hook does the same if
 * the JVM exits first.
 */
public final class KafkaBroker implements AutoCloseable {

    public static final String LIBS_PROPERTY = "nearstream.kafka.libs";
    public static final String LIBS_ENV = "NEARSTREAM_KAFKA_LIBS";
    public static final String DEFAULT_RELATIVE_PATH = "kafka-server/target/lib";
    public static final String HEAP_PROPERTY = "nearstream.kafka.heap";
    public static final String DEFAULT_HEAP = "1g";

    private static final String SERVER_MAIN = "kafka.Kafka";
    private static final String STORAGE_TOOL_MAIN = "kafka.tools.StorageTool";
    private static final String SERVER_JAR_PREFIX = "kafka_";

    // Generous: the CI machine has two cores shared with other builds.
    private static final Duration FORMAT_TIMEOUT = Duration.ofSeconds(120);
    private static final Duration START_TIMEOUT = Duration.ofSeconds(180);
    private static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(60);
    private static final Duration STOP_GRACE = Duration.ofSeconds(10);
    private static final int START_ATTEMPTS = 3;
    private static final int LOG_TAIL_LINES = 60;

    private final Path tempDir;
    private final Path logFile;
    private final Process process;
    private final Thread shutdownHook;
    private final Admin admin;
    private final String bootstrapServers;
    private final Duration startupTime;
    private final String version;
    private final AtomicBoolean closed = new AtomicBoolean();

    private KafkaBroker(
            Path tempDir,
            Path logFile,
            Process process,
            Thread shutdownHook,
            Admin admin,
            String bootstrapServers,
            Duration startupTime,
            String version) {
        this.tempDir = tempDir;
        this.logFile = logFile;
        this.process = process;
        this.shutdownHook = shutdownHook;
        this.admin = admin;
        this.bootstrapServers = bootstrapServers;
        this.startupTime = startupTime;
        this.version = version;
    }

    /**
     * Runs a node until this JVM is stopped (Ctrl-C, SIGTERM), for manual runs of {@link
     * KafkaProducerPerf} and jobs: arguments are topics to create, {@code NAME:PARTITIONS} each.
     * Prints one line, {@code KAFKA bootstrap=HOST:PORT pid=PID version=V startup_s=S}, once the
     * node serves clients.
     */
    public static void main(String[] args) throws Exception {
        Map<String, Integer> topics = new LinkedHashMap<>();
        for (String arg : args) {
            int colon = arg.lastIndexOf(':');
            if (colon < 1 || !arg.substring(colon + 1).matches("[0-9]+")) {
                System.err.println("KafkaBroker: topics are NAME:PARTITIONS, got " + arg);
                System.exit(2);
            }
            topics.put(arg.substring(0, colon), Integer.parseInt(arg.substring(colon + 1)));
        }
        KafkaBroker kafka = start();
        Runtime.getRuntime().addShutdownHook(new Thread(kafka::close, "kafka-broker-close"));
        topics.forEach(kafka::createTopic);
        System.out.printf(
                Locale.ROOT,
                "KAFKA bootstrap=%s pid=%d version=%s startup_s=%.2f%n",
                kafka.bootstrapServers(),
                kafka.pid(),
                kafka.version(),
                kafka.startupTime().toMillis() / 1e3);
        System.out.flush();
        Thread.currentThread().join();
    }

    /** Starts a node with the default settings and waits until it serves clients. */
    public static KafkaBroker start() throws IOException {
        return start(Map.of());
    }

    /**
     * Starts a node whose {@code server.properties} has {@code overrides} on top of the defaults
     * (see {@link KafkaServerConfig}), and waits until an admin client sees it.
     */
    public static KafkaBroker start(Map<String, String> overrides) throws IOException {
        Path libs = libs();
        for (int attempt = 1; ; attempt++) {
            try {
                return startOnce(libs, overrides);
            } catch (PortTakenException e) {
                // The free ports were picked before Kafka bound them; something else got one.
                if (attempt == START_ATTEMPTS) {
                    throw new IllegalStateException(e.getMessage(), e);
                }
            }
        }
    }

    private static KafkaBroker startOnce(Path libs, Map<String, String> overrides)
            throws IOException {
        long t0 = System.nanoTime();
        Path tempDir = Files.createTempDirectory("nearstream-kafka-");
        Path logFile = tempDir.resolve("kafka.log");
        AtomicReference<Process> running = new AtomicReference<>();
        Thread hook =
                new Thread(
                        () -> {
                            ChildProcesses.stop(running.get(), Duration.ZERO);
                            ChildProcesses.deleteRecursively(tempDir);
                        },
                        "kafka-broker-killer");
        Runtime.getRuntime().addShutdownHook(hook);
        Admin admin = null;
        try {
            int[] ports = freePorts(2);
            Path config = tempDir.resolve("server.properties");
            Files.writeString(
                    config,
                    KafkaServerConfig.render(
                            KafkaServerConfig.properties(
                                    ports[0], ports[1], tempDir.resolve("data"), overrides)),
                    StandardCharsets.UTF_8);
            format(libs, config, logFile, running);

            String heap = System.getProperty(HEAP_PROPERTY, DEFAULT_HEAP);
            List<String> cmd = javaCommand(libs, "-Xms" + heap, "-Xmx" + heap);
            // The JVM flags of Kafka's own kafka-server-start.sh.
            cmd.addAll(
                    List.of(
                            "-XX:+UseG1GC",
                            "-XX:MaxGCPauseMillis=20",
                            "-XX:InitiatingHeapOccupancyPercent=35",
                            "-XX:+ExplicitGCInvokesConcurrent",
                            "-Djava.awt.headless=true",
                            "-Dorg.slf4j.simpleLogger.showDateTime=true",
                            "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
                            SERVER_MAIN,
                            config.toString()));
            Process server = ChildProcesses.launch(cmd, logFile);
            running.set(server);

            String bootstrap = "127.0.0.1:" + ports[0];
            admin = Admin.create(adminProperties(bootstrap));
            awaitReady(server, admin, logFile, ports);
            return new KafkaBroker(
                    tempDir,
                    logFile,
                    server,
                    hook,
                    admin,
                    bootstrap,
                    Duration.ofNanos(System.nanoTime() - t0),
                    version(libs));
        } catch (IOException | RuntimeException e) {
            if (admin != null) {
                admin.close(Duration.ZERO);
            }
            ChildProcesses.stop(running.get(), Duration.ZERO);
            ChildProcesses.removeShutdownHook(hook);
            ChildProcesses.deleteRecursively(tempDir);
            throw e;
        }
    }

    /** The directory holding Kafka's class path (see the class comment). */
    public static Path libs() {
        String configured = System.getProperty(LIBS_PROPERTY);
        if (configured == null || configured.isBlank()) {
            configured = System.getenv(LIBS_ENV);
        }
        if (configured != null && !configured.isBlank()) {
            Path p = Paths.get(configured);
            if (!hasServerJar(p)) {
                throw new IllegalStateException(
                        "no Kafka server jar ("
                                + SERVER_JAR_PREFIX
                                + "*.jar) in "
                                + p.toAbsolutePath()
                                + ", set by -D"
                                + LIBS_PROPERTY
                                + " or "
                                + LIBS_ENV);
            }
            return p;
        }
        for (Path dir = Paths.get("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolve(DEFAULT_RELATIVE_PATH);
            if (hasServerJar(candidate)) {
                return candidate;
            }
        }
        throw new IllegalStateException(
                "Kafka server libraries not found: run `mvn -pl kafka-server package` in the"
                        + " repository, or set -D"
                        + LIBS_PROPERTY
                        + "=DIR or "
                        + LIBS_ENV
                        + " (looked for "
                        + DEFAULT_RELATIVE_PATH
                        + " in "
                        + Paths.get("").toAbsolutePath()
                        + " and its parents)");
    }

    /** {@code 127.0.0.1:port}, the clients' {@code bootstrap.servers}. */
    public String bootstrapServers() {
        return bootstrapServers;
    }

    /** The server's process id. */
    public long pid() {
        return process.pid();
    }

    /** CPU seconds the server has used so far (see {@link ProcessCpu}). */
    public double cpuSeconds() throws IOException {
        return ProcessCpu.seconds(pid());
    }

    /** From {@link #start()} until an admin client saw the node, storage format included. */
    public Duration startupTime() {
        return startupTime;
    }

    /** Kafka's version, from the server jar's name. */
    public String version() {
        return version;
    }

    /** An admin client connected to the node; owned by this object (do not close it). */
    public Admin admin() {
        return admin;
    }

    /** Where its configuration, data and log live; deleted by {@link #close()}. */
    public Path directory() {
        return tempDir;
    }

    /** The server's output so far. */
    public String log() {
        return ChildProcesses.readLog(logFile);
    }

    /** Creates a topic with replication factor 1 and waits until every partition has a leader. */
    public void createTopic(String topic, int partitions) {
        createTopic(topic, partitions, Map.of());
    }

    /**
     * As {@link #createTopic(String, int)}, with topic-level settings ({@code retention.bytes}…).
     */
    public void createTopic(String topic, int partitions, Map<String, String> configs) {
        if (partitions < 1) {
            throw new IllegalArgumentException("partitions must be at least 1, got " + partitions);
        }
        NewTopic newTopic = new NewTopic(topic, partitions, (short) 1).configs(configs);
        await(admin.createTopics(List.of(newTopic)).all());
        KafkaTopics.awaitReady(admin, topic, ADMIN_TIMEOUT);
    }

    /** Deletes a topic (its files go in the background). */
    public void deleteTopic(String topic) {
        await(admin.deleteTopics(List.of(topic)).all());
    }

    /** The topic's partition count. */
    public int partitions(String topic) {
        return describe(topic).partitions().size();
    }

    /** The log-end offset of every partition of the topic, by partition number. */
    public Map<TopicPartition, Long> endOffsets(String topic) {
        Map<TopicPartition, OffsetSpec> request =
                describe(topic).partitions().stream()
                        .collect(
                                Collectors.toMap(
                                        p -> new TopicPartition(topic, p.partition()),
                                        p -> OffsetSpec.latest()));
        Map<TopicPartition, Long> offsets =
                new TreeMap<>(Comparator.comparingInt(TopicPartition::partition));
        await(admin.listOffsets(request).all())
                .forEach((tp, info) -> offsets.put(tp, info.offset()));
        return offsets;
    }

    /** Stops the server (SIGTERM, SIGKILL after a grace period) and deletes its directory. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            admin.close(Duration.ofSeconds(5));
        } finally {
            ChildProcesses.stop(process, STOP_GRACE);
            ChildProcesses.removeShutdownHook(shutdownHook);
            ChildProcesses.deleteRecursively(tempDir);
        }
    }

    @Override
    public String toString() {
        return "KafkaBroker{" + version + " at " + bootstrapServers + ", pid " + pid() + "}";
    }

    private TopicDescription describe(String topic) {
        return KafkaTopics.awaitReady(admin, topic, ADMIN_TIMEOUT);
    }

    private static <T> T await(org.apache.kafka.common.KafkaFuture<T> future) {
        try {
            return future.get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new IllegalStateException("Kafka admin request failed: " + e.getCause(), e);
        } catch (TimeoutException e) {
            throw new IllegalStateException(
                    "Kafka admin request got no answer within " + ADMIN_TIMEOUT, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for Kafka", e);
        }
    }

    private static void format(
            Path libs, Path config, Path logFile, AtomicReference<Process> running)
            throws IOException {
        List<String> cmd = javaCommand(libs, "-Xmx256m");
        cmd.addAll(
                List.of(
                        STORAGE_TOOL_MAIN,
                        "format",
                        "--cluster-id",
                        Uuid.randomUuid().toString(),
                        "--config",
                        config.toString()));
        Process tool = ChildProcesses.launch(cmd, logFile);
        running.set(tool);
        try {
            if (!tool.waitFor(FORMAT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException(
                        "Kafka storage format did not finish within "
                                + FORMAT_TIMEOUT
                                + ": "
                                + String.join(" ", cmd)
                                + "\n"
                                + tail(ChildProcesses.readLog(logFile)));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while formatting Kafka's storage", e);
        }
        if (tool.exitValue() != 0) {
            throw new IllegalStateException(
                    "Kafka storage format exited with status "
                            + tool.exitValue()
                            + ": "
                            + String.join(" ", cmd)
                            + "\n"
                            + tail(ChildProcesses.readLog(logFile)));
        }
    }

    private static void awaitReady(Process server, Admin admin, Path logFile, int[] ports) {
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        Exception last = null;
        while (true) {
            if (!server.isAlive()) {
                String log = ChildProcesses.readLog(logFile);
                String message =
                        "Kafka exited with status "
                                + server.exitValue()
                                + " before serving clients on ports "
                                + ports[0]
                                + ", "
                                + ports[1]
                                + "; the end of its output:\n"
                                + tail(log);
                if (log.contains("Address already in use")) {
                    throw new PortTakenException(message);
                }
                throw new IllegalStateException(message);
            }
            try {
                Collection<Node> nodes = admin.describeCluster().nodes().get(10, TimeUnit.SECONDS);
                if (!nodes.isEmpty()) {
                    return;
                }
            } catch (ExecutionException | TimeoutException e) {
                last = e;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for Kafka", e);
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(
                        "Kafka did not serve clients within "
                                + START_TIMEOUT
                                + " (last error: "
                                + last
                                + "); the end of its output:\n"
                                + tail(ChildProcesses.readLog(logFile)));
            }
            sleep(100);
        }
    }

    private static Properties adminProperties(String bootstrap) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "nearstream-kafka-broker-admin");
        // While the server starts, fail each probe quickly and probe again.
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
        p.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500");
        return p;
    }

    private static List<String> javaCommand(Path libs, String... jvmOptions) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(List.of(jvmOptions));
        cmd.add("-cp");
        cmd.add(libs.toAbsolutePath() + "/*");
        return cmd;
    }

    private static int[] freePorts(int n) throws IOException {
        // All open at once, so they differ; closed just before Kafka binds them.
        List<ServerSocket> sockets = new ArrayList<>();
        try {
            int[] ports = new int[n];
            for (int i = 0; i < n; i++) {
                ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                sockets.add(s);
                ports[i] = s.getLocalPort();
            }
            return ports;
        } finally {
            for (ServerSocket s : sockets) {
                s.close();
            }
        }
    }

    private static boolean hasServerJar(Path dir) {
        return serverJar(dir) != null;
    }

    private static Path serverJar(Path dir) {
        if (!Files.isDirectory(dir)) {
            return null;
        }
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(
                            f -> {
                                String name = f.getFileName().toString();
                                return name.startsWith(SERVER_JAR_PREFIX) && name.endsWith(".jar");
                            })
                    .findFirst()
                    .orElse(null);
        } catch (IOException e) {
            return null;
        }
    }

    /** {@code 4.2.0} from {@code kafka_2.13-4.2.0.jar}. */
    private static String version(Path libs) {
        String name = serverJar(libs).getFileName().toString();
        return name.substring(name.indexOf('-') + 1, name.length() - ".jar".length());
    }

    /** The last lines of a log: Kafka prints its whole configuration first. */
    private static String tail(String log) {
        String[] lines = log.split("\n");
        int from = Math.max(0, lines.length - LOG_TAIL_LINES);
        return String.join("\n", List.of(lines).subList(from, lines.length));
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for Kafka", e);
        }
    }

    /** The server could not bind a port picked as free: another attempt picks new ones. */
    private static final class PortTakenException extends IllegalStateException {
        PortTakenException(String message) {
            super(message);
        }
    }
}
