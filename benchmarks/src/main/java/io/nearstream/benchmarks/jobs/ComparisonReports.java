package io.nearstream.benchmarks.jobs;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Predicate;
import java.util.function.ToDoubleFunction;

/**
 * What the side-by-side comparison programs share ({@link CountJobComparison} and the SQL ones):
 * the run order of a repetition, medians, the machine's load, writing the page and the CSV.
 */
public final class ComparisonReports {

    private ComparisonReports() {}

    /**
     * The order in which repetition {@code r} runs {@code candidates}: reversed every other
     * repetition, so no candidate always runs first (on a warm JVM, after another's garbage).
     */
    public static <T> List<T> order(List<T> candidates, int r) {
        List<T> order = new ArrayList<>(candidates);
        if (r % 2 == 1) {
            Collections.reverse(order);
        }
        return order;
    }

    /** The median of {@code f} over the runs {@code which} selects (NaN when none). */
    public static double median(
            List<JobMeasurement> runs,
            Predicate<JobMeasurement> which,
            ToDoubleFunction<JobMeasurement> f) {
        double[] v = runs.stream().filter(which).mapToDouble(f).sorted().toArray();
        if (v.length == 0) {
            return Double.NaN;
        }
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    /** The 1-minute load average, NaN where /proc/loadavg cannot be read. */
    public static double loadAverage() {
        try {
            String text = Files.readString(Path.of("/proc/loadavg"), StandardCharsets.US_ASCII);
            return Double.parseDouble(text.split(" ")[0]);
        } catch (IOException | RuntimeException e) {
            return Double.NaN;
        }
    }

    /** The page and CSV to {@code out/basename.md} and {@code .csv}; the page to stdout too. */
    public static void write(Path out, String basename, String csv, String markdown)
            throws IOException {
        Files.createDirectories(out);
        Path csvFile = out.resolve(basename + ".csv");
        Path mdFile = out.resolve(basename + ".md");
        Files.writeString(csvFile, csv, StandardCharsets.UTF_8);
        Files.writeString(mdFile, markdown, StandardCharsets.UTF_8);
        System.out.println("wrote " + csvFile + " and " + mdFile);
        System.out.print(markdown);
    }
}
