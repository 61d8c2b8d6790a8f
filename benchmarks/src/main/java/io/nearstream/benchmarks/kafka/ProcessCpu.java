package io.nearstream.benchmarks.kafka;

import com.sun.management.OperatingSystemMXBean;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * CPU time (user + system) of a process: another one's from {@code /proc/<pid>/stat}, this JVM's
 * from its operating-system MXBean. Benchmarks take the difference of two readings.
 */
public final class ProcessCpu {

    /**
     * Clock ticks per second of {@code /proc/<pid>/stat}'s times: USER_HZ, 100 on x86-64 and arm64
     * Linux whatever the kernel's own tick rate.
     */
    private static final double TICKS_PER_SECOND = 100.0;

    // Fields after the ")" closing the command name: state is field 3, utime 14, stime 15.
    private static final int UTIME_AFTER_COMMAND = 14 - 3;
    private static final int STIME_AFTER_COMMAND = 15 - 3;

    private ProcessCpu() {}

    /** CPU seconds process {@code pid} has used so far (Linux only). */
    public static double seconds(long pid) throws IOException {
        String stat =
                Files.readString(
                        Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.UTF_8);
        // The command name may contain spaces and parentheses; the last ")" ends it.
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
        long ticks =
                Long.parseLong(fields[UTIME_AFTER_COMMAND])
                        + Long.parseLong(fields[STIME_AFTER_COMMAND]);
        return ticks / TICKS_PER_SECOND;
    }

    /** CPU seconds this JVM has used so far, all threads. */
    public static double ofThisProcess() {
        OperatingSystemMXBean os =
                (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        return os.getProcessCpuTime() / 1e9;
    }
}
