package io.nearstream.benchmarks.sql;

import io.nearstream.benchmarks.jobs.CountJobComparison;
import io.nearstream.benchmarks.jobs.JobMeasurement;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Predicate;
import java.util.function.ToDoubleFunction;

/** What the SQL comparisons' result pages share: medians, the CSV rows, the machine's load. */
final class Reports {

    /** The JVM command the result pages quote: the options Flink, Netty and Arrow need. */
    static final String JAVA =
            "java -Xmx2g --add-opens=java.base/java.lang=ALL-UNNAMED"
                    + " --add-opens=java.base/java.util=ALL-UNNAMED"
                    + " --add-opens=java.base/java.nio=ALL-UNNAMED"
                    + " --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \\\n"
                    + "    -Dio.netty.tryReflectionSetAccessible=true \\\n"
                    + "    -cp benchmarks/target/benchmarks.jar:$(cat benchmarks/target/sql-classpath.txt)";

    /** How to build what {@link #JAVA} runs. */
    static final String BUILD =
            "mvn -B -pl benchmarks -am package -DskipTests -DskipSanitizers -DskipBenchmarks";

    private Reports() {}

    /** Every run, in the CSV layout of the DataStream count comparison (one layout to parse). */
    static String csv(List<JobMeasurement> runs) {
        return CountJobComparison.csv(runs);
    }

    /** The median of {@code f} over the runs {@code which} selects (NaN when none). */
    static double median(
            List<JobMeasurement> runs,
            Predicate<JobMeasurement> which,
            ToDoubleFunction<JobMeasurement> f) {
        double[] v = runs.stream().filter(which).mapToDouble(f).sorted().toArray();
        if (v.length == 0) {
            return Double.NaN;
        }
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    /** CPU seconds per million records, this JVM's and the broker's together. */
    static double totalCpuPerMillion(JobMeasurement m) {
        return m.perMillion(m.jobCpuSeconds() + Math.max(0, m.brokerCpuSeconds()));
    }

    /** The 1-minute load average, NaN where /proc/loadavg cannot be read. */
    static double loadAverage() {
        try {
            String text = Files.readString(Path.of("/proc/loadavg"), StandardCharsets.US_ASCII);
            return Double.parseDouble(text.split(" ")[0]);
        } catch (IOException | RuntimeException e) {
            return Double.NaN;
        }
    }

    /** The page and CSV to {@code out/basename.md} and {@code .csv}; the page to stdout too. */
    static void write(Path out, String basename, String csv, String markdown) throws IOException {
        Files.createDirectories(out);
        Path csvFile = out.resolve(basename + ".csv");
        Path mdFile = out.resolve(basename + ".md");
        Files.writeString(csvFile, csv, StandardCharsets.UTF_8);
        Files.writeString(mdFile, markdown, StandardCharsets.UTF_8);
        System.out.println("wrote " + csvFile + " and " + mdFile);
        System.out.print(markdown);
    }
}
