package io.nearstream.flinkcluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The extension's own API against a cluster of one TaskManager: processes, metrics, a crash. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class FlinkSessionClusterITCase {

    /** Short heartbeats, so the JobManager notices a killed TaskManager within seconds. */
    @RegisterExtension
    static final FlinkSessionCluster FLINK =
            FlinkSessionCluster.builder()
                    .taskManagers(1)
                    .slotsPerTaskManager(1)
                    .configure("heartbeat.interval", "1000")
                    .configure("heartbeat.timeout", "5000")
                    .build();

    @Test
    void taskManagersAreProcessesWithMetricsThatCanCrashAndBeAdded() throws Exception {
        assertThat(FLINK.restUrl()).startsWith("http://127.0.0.1:");
        assertThat(FLINK.taskManagers()).containsExactly("tm-1");
        assertThat(ProcessHandle.of(FLINK.taskManagerPid("tm-1")))
                .get()
                .matches(ProcessHandle::isAlive);

        // The JobManager fetches metrics on demand: the first answers may still be empty.
        String[] names = {
            "Status.JVM.Threads.Count",
            "Status.JVM.Memory.Metaspace.Used",
            "Status.JVM.ClassLoader.ClassesLoaded"
        };
        Map<String, String> metrics =
                await(() -> FLINK.taskManagerMetrics("tm-1", names), m -> m.size() == names.length);
        assertThat(Long.parseLong(metrics.get("Status.JVM.Threads.Count"))).isPositive();
        assertThat(Long.parseLong(metrics.get("Status.JVM.ClassLoader.ClassesLoaded")))
                .isGreaterThan(1000);

        FLINK.startTaskManager("tm-2");
        assertThat(FLINK.taskManagers()).containsExactlyInAnyOrder("tm-1", "tm-2");

        FLINK.killTaskManager("tm-2");
        assertThatThrownBy(() -> FLINK.taskManagerPid("tm-2"))
                .hasMessageContaining("no TaskManager");
        assertThat(await(FLINK::taskManagers, ids -> ids.size() == 1)).containsExactly("tm-1");
    }

    private static <T> T await(Callable<T> value, Predicate<T> done) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        T now = value.call();
        while (!done.test(now)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("still " + now + " after 60 s");
            }
            Thread.sleep(200);
            now = value.call();
        }
        return now;
    }

    @Test
    void anUnknownJobIsAnError() {
        assertThatThrownBy(() -> FLINK.jobState("00000000000000000000000000000000"))
                .hasMessageContaining("404");
    }
}
