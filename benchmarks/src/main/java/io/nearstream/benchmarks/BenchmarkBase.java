package io.nearstream.benchmarks;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.SECONDS;

import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The JMH defaults of every Nearstream benchmark (the apache/flink-benchmarks model): throughput in
 * operations per millisecond, where an operation is one record ({@code @OperationsPerInvocation}),
 * one fork with a fixed heap and the {@code --add-opens} that Flink and Netty need on Java 17.
 *
 * <p>Command-line options override these: {@code -f}, {@code -wi}, {@code -i}, {@code -r}, {@code
 * -jvmArgsAppend}.
 */
@State(org.openjdk.jmh.annotations.Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(MILLISECONDS)
@Fork(
        value = 1,
        jvmArgsAppend = {
            "-Xms2g",
            "-Xmx2g",
            "--add-opens=java.base/java.lang=ALL-UNNAMED",
            "--add-opens=java.base/java.util=ALL-UNNAMED",
            "--add-opens=java.base/java.nio=ALL-UNNAMED",
            "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
            "-Dio.netty.tryReflectionSetAccessible=true"
        })
@Warmup(iterations = 2, time = 3, timeUnit = SECONDS)
@Measurement(iterations = 3, time = 3, timeUnit = SECONDS)
public abstract class BenchmarkBase {

    /**
     * System property: records pre-loaded into the broker (and read per invocation). Only the
     * default gives a correct primary score, since {@code @OperationsPerInvocation} is a constant;
     * the {@code records} secondary result is right for any value.
     */
    public static final String RECORDS_PROPERTY = "nearstream.bench.records";

    /** Records per benchmark invocation at full size: 1 M per streamlet with 4 streamlets. */
    public static final int RECORDS_PER_INVOCATION = 4_000_000;

    /** The record count this run pre-loads and reads per invocation. */
    public static int records() {
        return Integer.getInteger(RECORDS_PROPERTY, RECORDS_PER_INVOCATION);
    }
}
