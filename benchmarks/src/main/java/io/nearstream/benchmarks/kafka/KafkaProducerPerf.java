package io.nearstream.benchmarks.kafka;

import java.io.OutputStream;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.TopicExistsException;

/**
 * The Kafka counterpart of {@code nearstream-perf}'s producer side: {@code Np} producer threads
 * write fixed-size records into {@code Ns} partitions of a topic, with {@code batch.size} as the
 * chunk size and {@code acks=1}, for a duration or a record count. Every second it prints the
 * producers' throughput; at the end the median of the per-second figures, a {@code RESULT} line and
 * one line of JSON (see {@link KafkaPerfResult}), which is the last line of its output.
 *
 * <pre>{@code
 * java -cp benchmarks/target/benchmarks.jar io.nearstream.benchmarks.kafka.KafkaProducerPerf \
 *     --broker 127.0.0.1:9092 --topic bench --create --partitions 4 --producers 2 \
 *     --chunk-size 64K --record-size 100 --duration-s 10
 * }</pre>
 *
 * <p>Exit codes as {@code nearstream-perf}'s: 0 success, 1 broker or I/O error, 2 bad usage. {@link
 * #run} is the same run for callers in this JVM (the pre-load of benchmarks and tests).
 */
public final class KafkaProducerPerf {

    private static final int EXIT_ERROR = 1;
    private static final int EXIT_USAGE = 2;

    /** A run that counts records fails when no record was acknowledged for this long. */
    private static final long STALL_SECONDS = 120;

    private static final long CONNECT_SECONDS = 120;

    private KafkaProducerPerf() {}

    public static void main(String[] args) {
        KafkaPerfOptions options;
        try {
            options = KafkaPerfOptions.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println(
                    "KafkaProducerPerf: " + e.getMessage() + "\nRun with --help for usage.");
            System.exit(EXIT_USAGE);
            return;
        }
        if (options == null) {
            System.out.print(KafkaPerfOptions.USAGE);
            return;
        }
        try {
            run(options, System.out);
        } catch (IllegalArgumentException e) {
            System.err.println("KafkaProducerPerf: " + e.getMessage());
            System.exit(EXIT_USAGE);
        } catch (Exception e) {
            System.err.println("KafkaProducerPerf: " + e);
            e.printStackTrace();
            System.exit(EXIT_ERROR);
        }
        System.exit(0);
    }

    /** The run, printing nothing. */
    public static KafkaPerfResult runQuietly(KafkaPerfOptions options) throws Exception {
        return run(options, new PrintStream(OutputStream.nullOutputStream()));
    }

    /**
     * Runs the producers and prints their progress and results to {@code out}.
     *
     * @throws IllegalArgumentException when the topic has fewer partitions than asked for
     * @throws IllegalStateException when a producer failed (the first failure is its cause)
     */
    public static KafkaPerfResult run(KafkaPerfOptions o, PrintStream out) throws Exception {
        int partitions = prepareTopic(o, out);
        out.printf(
                Locale.ROOT,
                "kafka-producer-perf: topic %s, %d partitions, %d producers, batch.size %d B,"
                        + " record %d B, linger.ms %d, acks %s, compression %s, rate %s, %s%n",
                o.topic(),
                partitions,
                o.producers(),
                o.chunkBytes(),
                o.recordBytes(),
                o.lingerMs(),
                o.acks(),
                o.compression(),
                o.rate() == 0 ? "unlimited" : Long.toString(o.rate()),
                o.countsRecords() ? o.records() + " records" : o.durationSeconds() + " s");
        out.flush();

        CountDownLatch ready = new CountDownLatch(o.producers());
        CountDownLatch go = new CountDownLatch(1);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<KafkaPerfProducer> producers = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int p = 0; p < o.producers(); p++) {
            KafkaPerfProducer producer =
                    new KafkaPerfProducer(o, p, partitions, ready, go, stop, failure);
            producers.add(producer);
            Thread t = new Thread(producer, "kafka-producer-perf-" + p);
            threads.add(t);
            t.start();
        }
        try {
            if (!ready.await(CONNECT_SECONDS, TimeUnit.SECONDS)) {
                throw new IllegalStateException(
                        "producers did not connect to " + o.bootstrapServers() + " in time");
            }
            failIfFailed(failure);

            double cpuAtStart = ProcessCpu.ofThisProcess();
            long t0 = System.nanoTime();
            go.countDown();
            double median = measure(o, producers, threads, failure, t0, out);
            stop.set(true);
            joinAll(threads);
            double elapsed = (System.nanoTime() - t0) / 1e9;
            double cpu = ProcessCpu.ofThisProcess() - cpuAtStart;
            failIfFailed(failure);

            long produced = acknowledged(producers);
            if (o.countsRecords() && produced != o.records()) {
                throw new IllegalStateException(
                        produced + " records acknowledged, " + o.records() + " asked for");
            }
            KafkaPerfResult result =
                    new KafkaPerfResult(
                            o,
                            partitions,
                            elapsed,
                            produced,
                            Double.isNaN(median) ? produced / elapsed : median,
                            cpu);
            out.printf(
                    Locale.ROOT,
                    "median per second (first/last second excluded when run >= 3 s): producers"
                            + " %.0f rec/s %.2f MB/s%n",
                    result.medianRecordsPerSecond(),
                    result.medianMegabytesPerSecond());
            out.printf(
                    Locale.ROOT,
                    "totals over %.1f s: produced %d records (acknowledged), %.0f rec/s %.2f MB/s"
                            + " on average, %.2f CPU seconds (%.2f per million records)%n",
                    elapsed,
                    produced,
                    result.averageRecordsPerSecond(),
                    result.averageMegabytesPerSecond(),
                    cpu,
                    result.cpuSecondsPerMillionRecords());
            out.println(result.resultLine());
            out.println(result.json());
            out.flush();
            return result;
        } finally {
            stop.set(true);
            go.countDown();
            joinAll(threads);
        }
    }

    /**
     * Prints a line per second until the run is over; returns the median of the per-second figures,
     * or NaN when there was no whole second.
     */
    private static double measure(
            KafkaPerfOptions o,
            List<KafkaPerfProducer> producers,
            List<Thread> threads,
            AtomicReference<Throwable> failure,
            long t0,
            PrintStream out)
            throws InterruptedException {
        List<Double> samples = new ArrayList<>();
        long last = 0;
        long lastT = t0;
        long progressAt = t0;
        for (int k = 1; ; k++) {
            long next = t0 + TimeUnit.SECONDS.toNanos(k);
            while (System.nanoTime() < next && failure.get() == null && anyAlive(threads)) {
                Thread.sleep(5);
            }
            if (failure.get() != null || !anyAlive(threads)) {
                break;
            }
            long now = System.nanoTime();
            long acked = acknowledged(producers);
            double rps = (acked - last) / ((now - lastT) / 1e9);
            samples.add(rps);
            out.printf(
                    Locale.ROOT,
                    "t=%ds producers %.0f rec/s %.2f MB/s%n",
                    k,
                    rps,
                    rps * o.recordBytes() / 1e6);
            out.flush();
            if (acked != last) {
                progressAt = now;
            } else if (now - progressAt > TimeUnit.SECONDS.toNanos(STALL_SECONDS)) {
                throw new IllegalStateException(
                        "no record acknowledged for " + STALL_SECONDS + " s");
            }
            last = acked;
            lastT = now;
            if (!o.countsRecords() && k >= o.durationSeconds()) {
                break;
            }
        }
        return median(samples);
    }

    /** Median, leaving out the first and last second (ramp-up, partial tail) when there are 3+. */
    static double median(List<Double> samples) {
        List<Double> v = samples;
        if (v.size() >= 3) {
            v = v.subList(1, v.size() - 1);
        }
        if (v.isEmpty()) {
            return Double.NaN;
        }
        double[] x = v.stream().mapToDouble(Double::doubleValue).toArray();
        Arrays.sort(x);
        int n = x.length;
        return n % 2 == 1 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
    }

    /** Creates the topic when asked; returns the number of partitions to write. */
    private static int prepareTopic(KafkaPerfOptions o, PrintStream out) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrapServers());
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "kafka-producer-perf-admin");
        try (Admin admin = Admin.create(props)) {
            if (o.create()) {
                int wanted = Math.max(1, o.partitions());
                try {
                    admin.createTopics(List.of(new NewTopic(o.topic(), wanted, (short) 1)))
                            .all()
                            .get(60, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) {
                        throw e;
                    }
                    out.printf("topic %s exists; using it%n", o.topic());
                }
            }
            int existing =
                    KafkaTopics.awaitReady(
                                    admin, o.topic(), Duration.ofSeconds(o.create() ? 60 : 5))
                            .partitions()
                            .size();
            if (o.partitions() > existing) {
                throw new IllegalArgumentException(
                        "--partitions "
                                + o.partitions()
                                + " but topic "
                                + o.topic()
                                + " has "
                                + existing);
            }
            return o.partitions() == 0 ? existing : o.partitions();
        }
    }

    private static long acknowledged(List<KafkaPerfProducer> producers) {
        long sum = 0;
        for (KafkaPerfProducer p : producers) {
            sum += p.acknowledged();
        }
        return sum;
    }

    private static boolean anyAlive(List<Thread> threads) {
        for (Thread t : threads) {
            if (t.isAlive()) {
                return true;
            }
        }
        return false;
    }

    private static void joinAll(List<Thread> threads) throws InterruptedException {
        for (Thread t : threads) {
            t.join();
        }
    }

    private static void failIfFailed(AtomicReference<Throwable> failure) {
        Throwable t = failure.get();
        if (t != null) {
            throw new IllegalStateException("a producer failed: " + t, t);
        }
    }
}
