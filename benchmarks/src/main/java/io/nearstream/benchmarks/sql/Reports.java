package io.nearstream.benchmarks.sql;

import io.nearstream.benchmarks.jobs.JobMeasurement;

/**
 * What the SQL comparisons' result pages share beyond {@link
 * io.nearstream.benchmarks.jobs.ComparisonReports}: the commands they quote, the CPU per record.
 */
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

    /** CPU seconds per million records, this JVM's and the broker's together. */
    static double totalCpuPerMillion(JobMeasurement m) {
        return m.perMillion(m.jobCpuSeconds() + Math.max(0, m.brokerCpuSeconds()));
    }
}
