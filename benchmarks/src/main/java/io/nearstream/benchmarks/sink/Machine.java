package io.nearstream.benchmarks.sink;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Locale;

/** Where and when a benchmark ran, for its results page (Linux: read from /proc). */
record Machine(
        String started,
        String cpu,
        int cores,
        String memory,
        String kernel,
        String java,
        double loadBefore) {

    static Machine describe() {
        return new Machine(
                Instant.now().truncatedTo(ChronoUnit.SECONDS).toString(),
                readCpuModel(),
                Runtime.getRuntime().availableProcessors(),
                readMemory(),
                read("/proc/sys/kernel/osrelease").trim(),
                System.getProperty("java.vm.name") + " " + Runtime.version(),
                loadAverage());
    }

    /** The 1-minute load average now, NaN when unknown. */
    static double loadAverage() {
        try {
            return Double.parseDouble(read("/proc/loadavg").split(" ")[0]);
        } catch (RuntimeException e) {
            return Double.NaN;
        }
    }

    String line() {
        return String.format(
                Locale.ROOT,
                "%s, %d CPUs as the JVM sees them, %s memory; Linux %s; %s",
                cpu,
                cores,
                memory,
                kernel,
                java);
    }

    private static String readCpuModel() {
        for (String line : read("/proc/cpuinfo").split("\n")) {
            if (line.startsWith("model name")) {
                return line.substring(line.indexOf(':') + 1).trim();
            }
        }
        return "unknown CPU";
    }

    private static String readMemory() {
        for (String line : read("/proc/meminfo").split("\n")) {
            if (line.startsWith("MemTotal:")) {
                long kib = Long.parseLong(line.replaceAll("[^0-9]", ""));
                return String.format(Locale.ROOT, "%.0f GiB", kib / 1024.0 / 1024.0);
            }
        }
        return "unknown";
    }

    private static String read(String path) {
        try {
            return Files.readString(Path.of(path), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }
}
