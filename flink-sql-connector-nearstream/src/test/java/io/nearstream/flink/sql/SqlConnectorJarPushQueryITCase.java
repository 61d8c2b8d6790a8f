package io.nearstream.flink.sql;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.NearstreamProducer;
import io.nearstream.client.NearstreamProducerConfig;
import io.nearstream.client.RecordPosition;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.io.File;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shaded jar alone (no other Nearstream jar, no unshaded Netty or Arrow on the class path) runs
 * a SQL job in push mode: a child JVM with Flink's jars, the shaded jar and {@link
 * PushModeSelectJob} reads JSON records this JVM wrote to the real broker, and the broker's
 * counters show the rows came through a push subscription.
 */
class SqlConnectorJarPushQueryITCase {

    private static final String STREAM = "sql-jar-push";
    private static final int STREAMLETS = 2;
    private static final int RECORDS = 200;
    private static final long CHILD_TIMEOUT_S = 180;

    /**
     * JDK 17 options of Flink's distribution (config.yaml's env.java.opts.all) that a local
     * MiniCluster with Arrow needs: Arrow's MemoryUtil reads java.nio.Buffer.address, Flink's
     * serializers and Netty reach into java.lang, java.util and sun.nio.ch.
     */
    private static final List<String> JDK17_OPENS =
            List.of(
                    "--add-opens=java.base/java.nio=ALL-UNNAMED",
                    "--add-opens=java.base/java.lang=ALL-UNNAMED",
                    "--add-opens=java.base/java.util=ALL-UNNAMED",
                    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
                    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
                    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
                    // The relocated Netty reads its system properties under the relocated name.
                    "-Dio.nearstream.shaded.io.netty.tryReflectionSetAccessible=true");

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    @TempDir Path tmp;

    @Test
    void theShadedJarAloneRunsASqlJobInPushMode() throws Exception {
        BROKER.createStream(STREAM, STREAMLETS);
        List<String> expected = writeJsonRecords();
        long subscribesBefore = brokerStat("nearstream_push_subscribe_requests_total");
        long pushedBefore = brokerStat("nearstream_push_records_total");

        FlinkOnlyClassPath flink = FlinkOnlyClassPath.ofThisJvm();
        Child child = runChild(flink);

        assertThat(child.exitCode())
                .as("exit code of the child JVM; its output:\n%s", child.output())
                .isZero();
        assertThat(child.rows())
                .as("rows the child printed; its output:\n%s", child.output())
                .containsExactlyInAnyOrderElementsOf(expected);
        assertThat(brokerStat("nearstream_push_subscribe_requests_total") - subscribesBefore)
                .as("PushSubscribe requests: the job read in push mode")
                .isGreaterThanOrEqualTo(1);
        assertThat(brokerStat("nearstream_push_records_total") - pushedBefore)
                .as("records the broker pushed")
                .isGreaterThanOrEqualTo(RECORDS);
        assertThat(flink.leftOut())
                .as("left out of the child's class path: the Nearstream jars and unshaded Netty")
                .anyMatch(p -> p.toString().contains("nearstream-client"))
                .anyMatch(p -> p.toString().contains("netty-transport"));
    }

    /** RECORDS JSON lines over both streamlets; returns the rows the table should read. */
    private static List<String> writeJsonRecords() {
        List<String> rows = new ArrayList<>();
        List<CompletableFuture<RecordPosition>> acks = new ArrayList<>();
        try (NearstreamProducer producer =
                new NearstreamProducer(
                        NearstreamProducerConfig.builder(BROKER.client(), STREAM).build())) {
            for (int i = 0; i < RECORDS; i++) {
                String json = "{\"id\": " + i + ", \"word\": \"word-" + i + "\"}";
                acks.add(producer.sendTo(i % STREAMLETS, json.getBytes(StandardCharsets.UTF_8)));
                rows.add(i + "\tword-" + i);
            }
            producer.flush();
        }
        // A record the broker refused fails here, not as a missing row later.
        acks.forEach(CompletableFuture::join);
        return rows;
    }

    private Child runChild(FlinkOnlyClassPath flink) throws Exception {
        List<Path> classPath = new ArrayList<>();
        classPath.add(ShadedConnectorJar.path());
        classPath.add(testClasses());
        classPath.addAll(flink.kept());
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-Xmx1g");
        command.addAll(JDK17_OPENS);
        command.add("-Djava.io.tmpdir=" + tmp);
        // slf4j-simple from the test class path: Flink's warnings and errors, not its INFO lines.
        command.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
        command.add("-cp");
        command.add(
                classPath.stream()
                        .map(Path::toString)
                        .collect(Collectors.joining(File.pathSeparator)));
        command.add(PushModeSelectJob.class.getName());
        command.add(BROKER.address());
        command.add(STREAM);

        Path output = tmp.resolve("child.out");
        Process process =
                new ProcessBuilder(command)
                        .redirectErrorStream(true)
                        .redirectOutput(output.toFile())
                        .start();
        try {
            if (!process.waitFor(CHILD_TIMEOUT_S, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor();
                throw new AssertionError(
                        "the child JVM did not finish in "
                                + CHILD_TIMEOUT_S
                                + " s; its output:\n"
                                + Files.readString(output));
            }
        } finally {
            process.destroyForcibly();
        }
        return new Child(process.exitValue(), Files.readString(output));
    }

    /** This module's test classes, where PushModeSelectJob lies (target/test-classes). */
    private static Path testClasses() throws URISyntaxException {
        return Path.of(
                PushModeSelectJob.class
                        .getProtectionDomain()
                        .getCodeSource()
                        .getLocation()
                        .toURI());
    }

    private static long brokerStat(String name) throws Exception {
        return BROKER.client().stats().get(30, TimeUnit.SECONDS).getOrDefault(name, 0L);
    }

    /** What the child JVM did. */
    private record Child(int exitCode, String output) {

        /** The rows it printed, as {@code id<TAB>word}. */
        List<String> rows() {
            try (Stream<String> lines = output.lines()) {
                return lines.filter(l -> l.startsWith(PushModeSelectJob.ROW_PREFIX))
                        .map(l -> l.substring(PushModeSelectJob.ROW_PREFIX.length()))
                        .toList();
            }
        }
    }
}
