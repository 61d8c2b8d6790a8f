package io.nearstream.benchmarks.kafka;

import java.util.Locale;

/**
 * What one {@link KafkaProducerPerf} run measured. Throughput counts acknowledged records; MB/s
 * counts record bytes (records × record size, 1 MB = 10^6 bytes), as {@code nearstream-perf} does.
 *
 * @param options the run's options
 * @param partitions partitions written
 * @param elapsedSeconds from the producers' start until the last one closed (its records
 *     acknowledged)
 * @param produced records acknowledged
 * @param medianRecordsPerSecond median of the per-second figures, first and last second left out
 *     when there are at least three; the average when the run had no whole second
 * @param cpuSeconds CPU time of this process (user + system) over the run
 */
public record KafkaPerfResult(
        KafkaPerfOptions options,
        int partitions,
        double elapsedSeconds,
        long produced,
        double medianRecordsPerSecond,
        double cpuSeconds) {

    /** Records acknowledged per second over the whole run. */
    public double averageRecordsPerSecond() {
        return elapsedSeconds > 0 ? produced / elapsedSeconds : 0;
    }

    public double medianMegabytesPerSecond() {
        return megabytes(medianRecordsPerSecond);
    }

    public double averageMegabytesPerSecond() {
        return megabytes(averageRecordsPerSecond());
    }

    /** CPU seconds of this process per million records produced. */
    public double cpuSecondsPerMillionRecords() {
        return produced > 0 ? cpuSeconds * 1e6 / produced : 0;
    }

    /** {@code nearstream-perf}'s RESULT line, for the producer side, plus CPU seconds. */
    public String resultLine() {
        return String.format(
                Locale.ROOT,
                "RESULT producer_rps=%.0f producer_mbps=%.2f produced=%d avg_rps=%.0f cpu_s=%.2f",
                medianRecordsPerSecond,
                medianMegabytesPerSecond(),
                produced,
                averageRecordsPerSecond(),
                cpuSeconds);
    }

    /** The result and the run's settings as one line of JSON. */
    public String json() {
        return String.format(
                Locale.ROOT,
                "{\"tool\":\"kafka-producer-perf\",\"bootstrap\":\"%s\",\"topic\":\"%s\","
                        + "\"partitions\":%d,\"producers\":%d,\"record_bytes\":%d,"
                        + "\"chunk_bytes\":%d,\"linger_ms\":%d,\"acks\":\"%s\",\"inflight\":%d,"
                        + "\"compression\":\"%s\",\"rate\":%d,\"elapsed_s\":%.3f,\"produced\":%d,"
                        + "\"producer_rps\":%.0f,\"producer_mbps\":%.2f,\"avg_rps\":%.0f,"
                        + "\"avg_mbps\":%.2f,\"cpu_s\":%.3f,\"cpu_s_per_million\":%.3f}",
                escape(options.bootstrapServers()),
                escape(options.topic()),
                partitions,
                options.producers(),
                options.recordBytes(),
                options.chunkBytes(),
                options.lingerMs(),
                options.acks(),
                options.inflight(),
                options.compression(),
                options.rate(),
                elapsedSeconds,
                produced,
                medianRecordsPerSecond,
                medianMegabytesPerSecond(),
                averageRecordsPerSecond(),
                averageMegabytesPerSecond(),
                cpuSeconds,
                cpuSecondsPerMillionRecords());
    }

    private double megabytes(double recordsPerSecond) {
        return recordsPerSecond * options.recordBytes() / 1e6;
    }

    private static String escape(String s) {
        StringBuilder b = new StringBuilder(s.length());
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }
}
