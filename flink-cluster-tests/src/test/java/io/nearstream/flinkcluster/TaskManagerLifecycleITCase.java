package io.nearstream.flinkcluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.benchmarks.workloads.CampaignWindowCount;
import io.nearstream.benchmarks.workloads.ReferenceWordCount;
import io.nearstream.benchmarks.workloads.ResultRecords;
import io.nearstream.benchmarks.workloads.YsbReference;
import io.nearstream.client.NearstreamProducer;
import io.nearstream.client.NearstreamProducerConfig;
import io.nearstream.testing.Json;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The example word count job (fat jar: the connector in the job's own class loader) on a session
 * cluster of two TaskManager JVMs with two slots each, at parallelism 4, so every TaskManager runs
 * two source readers on the broker's host:
 *
 * <ul>
 *   <li>push: one PushSubscribe per job start for the whole host, the second JVM's readers reading
 *       rings of the same region;
 *   <li>cancel and resubmit five times: the TaskManagers' thread counts and metaspace stay flat,
 *       every job loads the JNI library in its own class loader and that copy is gone once the job
 *       is, and no push region is left in the broker's push directory after a cancel;
 *   <li>a TaskManager killed with SIGKILL mid-job, pull and push: a replacement starts, the job
 *       recovers from its checkpoint, and the output is exactly the reference counts.
 * </ul>
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class TaskManagerLifecycleITCase {

    private static final int PARALLELISM = 4;

    /** YSB: 16 000 events 10 ms apart (16 windows of 10 s), at 800/s per subtask about 5 s. */
    private static final int YSB_EVENTS = 16_000;

    private static final long YSB_START_MS = 1_700_000_000_000L; // a multiple of 10 s
    private static final long YSB_SPACING_MS = 10;
    private static final Duration RESULT_TIMEOUT = Duration.ofSeconds(120);
    private static final String JNI_LIBRARY = "libnearstream_jni.so";

    /**
     * JNI copies a TaskManager may keep mapped after its jobs ended, however many ran: Java 17's
     * record methods cache a method handle typed with the last record class they served in a
     * JDK-wide static, which holds the last job's class loader until another job's records replace
     * it; and the copy of the job before may still wait for its unload. A leak grows by one per
     * job.
     */
    private static final int MAX_RETAINED_JNI_COPIES = 2;

    /**
     * Threads a TaskManager may gain over four cycles without a leak: Flink grows some pools lazily
     * (its I/O executor, the RPC dispatchers). The connector's own threads are checked exactly:
     * none after a cancel.
     */
    private static final int FLINK_THREAD_SLACK = 6;

    /** The REST API's TaskManager of a subtask not deployed (yet). */
    private static final String UNASSIGNED = "(unassigned)";

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    /**
     * Lost TaskManagers noticed within seconds, restarts that do not give up, and TaskManager
     * metrics and job details in the REST API at most half a second old.
     */
    @RegisterExtension
    static final FlinkSessionCluster FLINK =
            FlinkSessionCluster.builder()
                    .configure("metrics.fetcher.update-interval", "500")
                    .configure("web.refresh-interval", "500")
                    .configure("heartbeat.interval", "1000")
                    .configure("heartbeat.timeout", "5000")
                    .configure("restart-strategy.type", "fixed-delay")
                    .configure("restart-strategy.fixed-delay.attempts", "50")
                    .configure("restart-strategy.fixed-delay.delay", "1 s")
                    .build();

    @TempDir static Path tmp;

    private static List<String> lines;
    private static Map<String, Long> totals;
    private static int replacements;

    @BeforeAll
    static void referenceCounts() throws Exception {
        Path corpus = Repository.file("benchmarks/src/test/resources/workloads/hamlet-opening.txt");
        lines =
                Files.readAllLines(corpus, StandardCharsets.UTF_8).stream()
                        .filter(line -> !line.isBlank())
                        .toList();
        totals = ReferenceWordCount.count(corpus, 1, tmp);
    }

    @Test
    @Order(1)
    void twoTaskManagersOnTheBrokersHostShareOnePushSubscription() throws Exception {
        long subscribesBefore = brokerStat("nearstream_push_subscribe_requests_total");
        long pushedBefore = brokerStat("nearstream_push_records_total");
        try (RunningJob job = RunningJob.submit("per-host", "push", lines)) {
            job.awaitExactCounts();
            assertThat(job.sourceTaskManagers())
                    .as("TaskManagers running the source's subtasks")
                    .hasSize(2);
            assertThat(brokerStat("nearstream_push_subscribe_requests_total") - subscribesBefore)
                    .as("PushSubscribe requests for one job start on one host")
                    .isEqualTo(1);
            assertThat(brokerStat("nearstream_push_records_total") - pushedBefore)
                    .as("records the broker pushed")
                    .isGreaterThanOrEqualTo(lines.size());
            assertThat(pushRegions()).as("push regions of the running job").hasSize(1);
        }
    }

    @Test
    @Order(2)
    void cancelAndResubmitFiveTimesLeavesNoThreadsClassLoadersOrRegionsBehind() throws Exception {
        List<String> tms = FLINK.taskManagers();
        Map<String, long[]> firstCycle = null;
        Set<String> jniCopiesSeen = new HashSet<>();
        for (int cycle = 0; cycle <= 5; cycle++) {
            try (RunningJob job = RunningJob.submit("cycle-" + cycle, "push", lines)) {
                job.awaitFirstCounts();
                assertThat(pushRegions()).as("push regions while cycle %d runs", cycle).hasSize(1);
                for (String tm : tms) {
                    // This job's class loader loaded a copy of its own, next to any retained.
                    Set<String> copies = jniCopies(tm);
                    assertThat(copies)
                            .as("JNI library copies mapped by %s in cycle %d", tm, cycle)
                            .anyMatch(copy -> !jniCopiesSeen.contains(copy));
                    jniCopiesSeen.addAll(copies);
                }
            }
            assertThat(awaitNoPushRegions())
                    .as("push regions left after cancelling cycle %d", cycle)
                    .isEmpty();
            Map<String, long[]> after = new java.util.HashMap<>();
            for (String tm : tms) {
                assertThat(awaitJniCopiesUnloaded(tm))
                        .as("JNI copies still mapped by %s once cycle %d's job is gone", tm, cycle)
                        .hasSizeLessThanOrEqualTo(MAX_RETAINED_JNI_COPIES);
                assertThat(awaitNoConnectorThreads(tm))
                        .as("connector threads left in %s after cycle %d", tm, cycle)
                        .isEmpty();
                after.put(tm, jvmFigures(tm));
            }
            if (cycle == 1) {
                firstCycle = after; // cycle 0 warms the TaskManagers up (Flink's own classes)
            }
            if (cycle == 5) {
                for (String tm : tms) {
                    long[] first = firstCycle.get(tm);
                    long[] last = after.get(tm);
                    System.out.printf(
                            "%s after cycles 1 and 5: threads %d -> %d, metaspace %d -> %d"
                                    + " KiB, classes unloaded %d -> %d%n",
                            tm,
                            first[0],
                            last[0],
                            first[1] / 1024,
                            last[1] / 1024,
                            first[2],
                            last[2]);
                    assertThat(last[0])
                            .as("%s thread count after 5 cycles (after cycle 1: %d)", tm, first[0])
                            .isLessThanOrEqualTo(first[0] + FLINK_THREAD_SLACK);
                    assertThat(last[1])
                            .as(
                                    "%s metaspace bytes after 5 cycles (after cycle 1: %d)",
                                    tm, first[1])
                            .isLessThanOrEqualTo(first[1] + 4L * 1024 * 1024);
                    assertThat(last[2] - first[2])
                            .as("classes %s unloaded in cycles 2 to 5", tm)
                            .isPositive();
                }
            }
        }
    }

    @Test
    @Order(3)
    void aKilledTaskManagerIsReplacedAndPullReadersRecoverExactly() throws Exception {
        killMidJob("kill-pull", "pull");
    }

    @Test
    @Order(4)
    void aKilledTaskManagerIsReplacedAndPushReadersRecoverExactly() throws Exception {
        killMidJob("kill-push", "push");
        assertThat(awaitNoPushRegions()).as("push regions left after the cancel").isEmpty();
    }

    /**
     * YSB as the benchmarks run it ({@code JobRunner --cluster session}, the benchmarks' fat jar
     * submitted with {@code flink run}), push, exactly-once output, over a bounded stream of
     * generated ad events slowed to last several seconds: one TaskManager running it dies once the
     * first window counts are committed. The job must still finish with every (campaign, window)
     * count exactly once, as the generator's own record of its events says.
     */
    @Test
    @Order(5)
    void ysbRecoversExactlyFromAKilledTaskManager() throws Exception {
        Path table = tmp.resolve("ysb-campaigns.csv");
        YsbReference reference =
                YsbReference.withTable(table, 21, YSB_EVENTS, YSB_START_MS, YSB_SPACING_MS);
        BROKER.createStream("ysb-in", PARALLELISM);
        // Streamlet i mod 4: each streamlet in event-time order, so no view is ever late.
        try (NearstreamProducer producer =
                new NearstreamProducer(
                        NearstreamProducerConfig.builder(BROKER.client(), "ysb-in").build())) {
            for (int i = 0; i < reference.events.size(); i++) {
                producer.sendTo(i % PARALLELISM, reference.events.get(i), (pos, error) -> {});
            }
            producer.flush();
        }
        List<String> args =
                List.of(
                        "--cluster", "session",
                        "--workload", "ysb",
                        "--mode", "push",
                        "--broker", BROKER.address(),
                        "--stream", "ysb-in",
                        "--parallelism", Integer.toString(PARALLELISM),
                        "--ysb-campaigns", table.toString(),
                        "--output-stream", "ysb-out",
                        "--output-streamlets", "2",
                        "--output-guarantee", "exactly-once",
                        "--checkpoint-interval-ms", "300",
                        "--max-records-per-second-per-subtask", "800");
        String id =
                FLINK.submitCli(
                        Repository.file("benchmarks/target/benchmarks.jar"),
                        "io.nearstream.benchmarks.jobs.JobRunner",
                        args);
        try (Streams.Reader output = new Streams.Reader(BROKER.client(), "ysb-out")) {
            FLINK.awaitJobState(id, "RUNNING", Duration.ofSeconds(60));
            assertThat(output.readAtLeast(1, RESULT_TIMEOUT))
                    .as("window counts committed with a checkpoint")
                    .isNotEmpty();
            String victim = sourceTaskManagers(id).iterator().next();
            assertThat(FLINK.jobState(id))
                    .as("the job when the TaskManager dies")
                    .isEqualTo("RUNNING");
            FLINK.killTaskManager(victim);
            FLINK.startTaskManager("replacement-" + ++replacements);
            FLINK.awaitJobState(id, "FINISHED", RESULT_TIMEOUT);
            assertThat(FLINK.restGet("/jobs/" + id + "/exceptions"))
                    .as("the job's exception history names the lost TaskManager")
                    .contains(victim);
        }
        List<CampaignWindowCount> windows = new ArrayList<>();
        for (String r : ResultRecords.readAll(BROKER.client(), "ysb-out", Duration.ofSeconds(2))) {
            windows.add(CampaignWindowCount.parseCsv(r));
        }
        // The views per window first: a difference there is lost or repeated events, one only in
        // the exact check below is events counted for the wrong campaign.
        TreeMap<Long, Long> viewsPerWindow = new TreeMap<>();
        for (CampaignWindowCount w : windows) {
            viewsPerWindow.merge(w.windowEnd, w.count, Long::sum);
        }
        assertThat(viewsPerWindow).as("views per window").isEqualTo(reference.viewsPerWindow);
        reference.assertExactlyOnceEach(windows);
        assertThat(awaitNoPushRegions()).as("push regions left after the job").isEmpty();
    }

    /**
     * Half of the text goes in, the first counts come out (a checkpoint committed), then one of the
     * TaskManagers running the job dies with SIGKILL, a replacement starts, the other half goes in,
     * and the committed output must be exactly the reference counts.
     */
    private static void killMidJob(String name, String mode) throws Exception {
        int half = lines.size() / 2;
        try (RunningJob job = RunningJob.submit(name, mode, lines.subList(0, half))) {
            job.awaitFirstCounts();
            String victim = job.sourceTaskManagers().iterator().next();
            FLINK.killTaskManager(victim);
            FLINK.startTaskManager("replacement-" + ++replacements);
            Streams.produce(BROKER.client(), job.input, lines.subList(half, lines.size()));
            job.awaitExactCounts();
            assertThat(FLINK.restGet("/jobs/" + job.id + "/exceptions"))
                    .as("the job's exception history names the lost TaskManager")
                    .contains(victim);
            if (mode.equals("push")) {
                assertThat(pushRegions())
                        .as("push regions once recovered (the killed JVM's ones reclaimed)")
                        .hasSize(1);
            }
        }
    }

    /** A word count job over its own streams, cancelled on close. */
    private static final class RunningJob implements AutoCloseable {
        final String id;
        final String input;
        final Streams.Reader output;

        private RunningJob(String id, String input, Streams.Reader output) {
            this.id = id;
            this.input = input;
            this.output = output;
        }

        static RunningJob submit(String name, String mode, List<String> text) throws Exception {
            String input = "words-" + name;
            String output = "counts-" + name;
            BROKER.createStream(input, PARALLELISM);
            BROKER.createStream(output, PARALLELISM);
            Streams.produce(BROKER.client(), input, text);
            String id =
                    FLINK.submitRest(
                            ExampleJobs.jar("fat"),
                            ExampleJobs.WORD_COUNT,
                            ExampleJobs.wordCountArgs(
                                    BROKER.address(),
                                    input,
                                    output,
                                    mode,
                                    PARALLELISM,
                                    "wordcount-" + name));
            RunningJob job = new RunningJob(id, input, new Streams.Reader(BROKER.client(), output));
            FLINK.awaitJobState(id, "RUNNING", Duration.ofSeconds(60));
            return job;
        }

        void awaitFirstCounts() {
            assertThat(output.readAtLeast(1, RESULT_TIMEOUT))
                    .as("counts committed with a checkpoint")
                    .isNotEmpty();
        }

        void awaitExactCounts() {
            output.readAtLeast(RunningCounts.expectedSize(totals), RESULT_TIMEOUT);
            List<String> counts = output.readUntilQuiet(Duration.ofSeconds(2));
            assertThat(RunningCounts.differences(totals, counts))
                    .as("the output against the reference counts")
                    .isEmpty();
        }

        Set<String> sourceTaskManagers() throws Exception {
            return TaskManagerLifecycleITCase.sourceTaskManagers(id);
        }

        @Override
        public void close() throws Exception {
            output.close();
            FLINK.cancel(id);
        }
    }

    /**
     * The resource ids of the TaskManagers running the source's subtasks, once every subtask runs.
     */
    static Set<String> sourceTaskManagers(String id) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        Set<String> tms = sourceTaskManagersNow(id);
        while (tms.contains(UNASSIGNED) && System.nanoTime() < deadline) {
            Thread.sleep(200);
            tms = sourceTaskManagersNow(id);
        }
        assertThat(tms).as("TaskManagers of the source's subtasks").doesNotContain(UNASSIGNED);
        return tms;
    }

    private static Set<String> sourceTaskManagersNow(String id) throws Exception {
        Map<String, Object> job = Json.object(FLINK.restGet("/jobs/" + id));
        for (Object v : (List<?>) job.get("vertices")) {
            Map<?, ?> vertex = (Map<?, ?>) v;
            if (String.valueOf(vertex.get("name")).startsWith("Source")) {
                Map<String, Object> details =
                        Json.object(FLINK.restGet("/jobs/" + id + "/vertices/" + vertex.get("id")));
                Set<String> tms = new HashSet<>();
                for (Object s : (List<?>) details.get("subtasks")) {
                    tms.add(String.valueOf(((Map<?, ?>) s).get("taskmanager-id")));
                }
                return tms;
            }
        }
        throw new AssertionError("no source vertex in " + job);
    }

    /** The region files of the test broker's push subscriptions in its push directory. */
    private static List<Path> pushRegions() throws Exception {
        String prefix = "nearstream-push-" + BROKER.pid() + "-";
        try (var files = Files.list(Path.of("/dev/shm"))) {
            return files.filter(f -> f.getFileName().toString().startsWith(prefix)).toList();
        }
    }

    /** Waits up to 10 s for the broker to unlink its push regions; returns those left. */
    private static List<Path> awaitNoPushRegions() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        List<Path> left = pushRegions();
        while (!left.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(200);
            left = pushRegions();
        }
        return left;
    }

    /**
     * The copies of the JNI library the TaskManager has mapped: each class loader that loads the
     * connector extracts and maps one of its own (docs/flink-connector.md, "Where the jars go").
     */
    private static Set<String> jniCopies(String tm) throws Exception {
        Set<String> copies = new HashSet<>();
        for (String line :
                Files.readAllLines(Path.of("/proc/" + FLINK.taskManagerPid(tm), "maps"))) {
            int at = line.indexOf('/');
            if (at >= 0 && line.contains(JNI_LIBRARY)) {
                copies.add(line.substring(at));
            }
        }
        return copies;
    }

    /**
     * Collects garbage in the TaskManager until the JNI copies of finished jobs are unloaded (the
     * JVM unloads a library once its class loader is collected), for up to 30 s; returns those
     * still mapped. A class loader that something still holds keeps its copy mapped for good, so a
     * leak grows by one copy per job; {@link #MAX_RETAINED_JNI_COPIES} may stay.
     */
    private static Set<String> awaitJniCopiesUnloaded(String tm) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        Set<String> left = jniCopies(tm);
        while (left.size() > MAX_RETAINED_JNI_COPIES && System.nanoTime() < deadline) {
            collectGarbage(tm);
            Thread.sleep(500);
            left = jniCopies(tm);
        }
        return left;
    }

    /** Threads, metaspace bytes used and classes unloaded so far, after a full GC. */
    private static long[] jvmFigures(String tm) throws Exception {
        collectGarbage(tm);
        Thread.sleep(500); // metrics are sampled
        Map<String, String> m =
                FLINK.taskManagerMetrics(
                        tm,
                        "Status.JVM.Threads.Count",
                        "Status.JVM.Memory.Metaspace.Used",
                        "Status.JVM.ClassLoader.ClassesUnloaded");
        return new long[] {
            Long.parseLong(m.get("Status.JVM.Threads.Count")),
            Long.parseLong(m.get("Status.JVM.Memory.Metaspace.Used")),
            Long.parseLong(m.get("Status.JVM.ClassLoader.ClassesUnloaded"))
        };
    }

    /**
     * Waits up to 10 s until the TaskManager runs no thread of the connector (named {@code
     * nearstream-...}: push group schedulers, client I/O threads, producers); returns those left.
     */
    private static List<String> awaitNoConnectorThreads(String tm) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        List<String> left = connectorThreads(tm);
        while (!left.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(200);
            left = connectorThreads(tm);
        }
        return left;
    }

    private static List<String> connectorThreads(String tm) throws Exception {
        List<String> names = new ArrayList<>();
        for (String line : jcmd(tm, "Thread.print").split("\n")) {
            if (line.startsWith("\"nearstream-")) {
                names.add(line.substring(1, line.indexOf('"', 1)));
            }
        }
        return names;
    }

    /** A full GC in the TaskManager's JVM, with the JDK's jcmd. */
    private static void collectGarbage(String tm) throws Exception {
        jcmd(tm, "GC.run");
    }

    /** Runs a jcmd command against the TaskManager's JVM and returns its output. */
    private static String jcmd(String tm, String jcmdCommand) throws Exception {
        Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
        List<String> command = new ArrayList<>();
        command.add(jcmd.toString());
        command.add(Long.toString(FLINK.taskManagerPid(tm)));
        command.add(jcmdCommand);
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).as("jcmd %s", jcmdCommand).isTrue();
        assertThat(p.exitValue()).as("jcmd %s: %s", jcmdCommand, out).isZero();
        return out;
    }

    private static long brokerStat(String name) throws Exception {
        return BROKER.client().stats().get(30, TimeUnit.SECONDS).getOrDefault(name, 0L);
    }
}
