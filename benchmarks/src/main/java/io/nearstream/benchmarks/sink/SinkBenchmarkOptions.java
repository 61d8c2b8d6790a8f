package io.nearstream.benchmarks.sink;

import io.nearstream.benchmarks.jobs.Flags;
import io.nearstream.client.Durability;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The settings of a {@link SinkThroughputBenchmark} run, from its flags (defaults in brackets):
 * {@code --sinks} [nearstream-alo,nearstream-eo,kafka-alo,kafka-eo; {@code discard} adds Flink's
 * discarding sink as a baseline], {@code --repetitions} [2], {@code --warmup-s} [5], {@code
 * --measure-s} [25], {@code --checkpoint-ms} [1000], {@code --record-bytes} [100], {@code
 * --parallelism} [1], {@code --streamlets} [4; = Kafka partitions], {@code --workers} [2;
 * nearstreamd's], {@code --durability} [async; of the Nearstream streams], {@code --batch-bytes}
 * [65536; Nearstream chunk and Kafka batch.size], {@code --linger-ms} [5; both], {@code
 * --kafka-txn-timeout-ms} [60000], {@code --retention-mb} [256; per streamlet and partition, so a
 * run's data stays bounded: every run writes a new stream or topic], {@code --out}
 * [target/sink-results].
 */
record SinkBenchmarkOptions(
        List<SinkKind> sinks,
        int repetitions,
        int warmupSeconds,
        int measureSeconds,
        long checkpointMs,
        int recordBytes,
        int parallelism,
        int streamlets,
        int workers,
        Durability durability,
        int batchBytes,
        long lingerMs,
        long kafkaTransactionTimeoutMs,
        int retentionMb,
        Path out) {

    static final Set<String> FLAGS =
            Set.of(
                    "sinks",
                    "repetitions",
                    "warmup-s",
                    "measure-s",
                    "checkpoint-ms",
                    "record-bytes",
                    "parallelism",
                    "streamlets",
                    "workers",
                    "durability",
                    "batch-bytes",
                    "linger-ms",
                    "kafka-txn-timeout-ms",
                    "retention-mb",
                    "out");

    static final String DEFAULT_SINKS = "nearstream-alo,nearstream-eo,kafka-alo,kafka-eo";

    /**
     * @throws IllegalArgumentException on an unknown flag or a bad value
     */
    static SinkBenchmarkOptions parse(String[] args) {
        Flags flags = new Flags(args, FLAGS);
        int recordBytes = flags.positiveInt("record-bytes", 100);
        if (recordBytes < 8) {
            throw new IllegalArgumentException(
                    "--record-bytes must be at least 8 (a record carries its index)");
        }
        return new SinkBenchmarkOptions(
                SinkKind.parseList(flags.string("sinks", DEFAULT_SINKS)),
                flags.positiveInt("repetitions", 2),
                flags.intValue("warmup-s", 5, 0),
                flags.positiveInt("measure-s", 25),
                flags.positiveLong("checkpoint-ms", 1000),
                recordBytes,
                flags.positiveInt("parallelism", 1),
                flags.positiveInt("streamlets", 4),
                flags.positiveInt("workers", 2),
                durability(flags.string("durability", "async")),
                flags.positiveInt("batch-bytes", 64 * 1024),
                flags.longValue("linger-ms", 5, 0),
                flags.positiveLong("kafka-txn-timeout-ms", 60_000),
                flags.positiveInt("retention-mb", 256),
                Path.of(flags.string("out", "target/sink-results")));
    }

    private static Durability durability(String name) {
        try {
            return Durability.valueOf(name.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "--durability must be none, async or sync, not '" + name + "'");
        }
    }
}
