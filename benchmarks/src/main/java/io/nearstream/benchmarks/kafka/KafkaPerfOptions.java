package io.nearstream.benchmarks.kafka;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * What {@link KafkaProducerPerf} runs: its command-line flags, named as {@code nearstream-perf}'s
 * where the idea is the same (so a sweep passes the same flags to both), checked when parsed.
 *
 * @param bootstrapServers {@code --broker}: Kafka's {@code bootstrap.servers}
 * @param topic {@code --topic}
 * @param create {@code --create}: create the topic with {@code partitions} partitions (an existing
 *     one is reused)
 * @param producers {@code --producers}: producer threads, one {@code KafkaProducer} each
 * @param partitions {@code --partitions}: partitions to write (the first ones of the topic); 0 =
 *     all of an existing topic, 1 when creating
 * @param chunkBytes {@code --chunk-size}: the producer's {@code batch.size}, Kafka's chunk
 * @param recordBytes {@code --record-size}: value bytes per record (records have no key)
 * @param lingerMs {@code --linger-ms}: {@code linger.ms}
 * @param acks {@code --acks}: {@code acks} (0, 1 or all)
 * @param inflight {@code --inflight}: {@code max.in.flight.requests.per.connection}
 * @param compression {@code --compression}: {@code compression.type}
 * @param rate {@code --rate}: records/s over all producers, 0 = unlimited
 * @param durationSeconds {@code --duration-s}: seconds to produce, when {@code records} is 0
 * @param records {@code --records}: produce exactly this many records, then stop (0 = run for
 *     {@code durationSeconds})
 */
public record KafkaPerfOptions(
        String bootstrapServers,
        String topic,
        boolean create,
        int producers,
        int partitions,
        int chunkBytes,
        int recordBytes,
        int lingerMs,
        String acks,
        int inflight,
        String compression,
        long rate,
        int durationSeconds,
        long records) {

    public static final String USAGE =
            "Usage: KafkaProducerPerf --broker HOST:PORT --topic T [--create] [--producers Np]\n"
                    + "         [--partitions Ns] [--chunk-size CS] [--record-size RS]"
                    + " [--linger-ms L]\n"
                    + "         [--acks 0|1|all] [--inflight K] [--compression C] [--rate R]\n"
                    + "         [--duration-s D | --records N]\n"
                    + "\n"
                    + "  --create           create the topic first (an existing one is reused)\n"
                    + "  --producers Np     producer threads, one KafkaProducer each (default 1)\n"
                    + "  --partitions Ns    partitions to write, the topic's first Ns (default:"
                    + " all of\n"
                    + "                     the topic; 1 when creating). Producer p writes the\n"
                    + "                     partitions s with s mod Np = p, a batch's worth of"
                    + " records\n"
                    + "                     to one before the next (Kafka's sticky"
                    + " partitioning)\n"
                    + "  --chunk-size CS    batch.size in bytes (default 16K; K/M suffixes)\n"
                    + "  --record-size RS   bytes per record value, no key (default 100)\n"
                    + "  --linger-ms L      linger.ms (default 5, Kafka's default)\n"
                    + "  --acks A           acks: 0, 1 or all (default 1)\n"
                    + "  --inflight K       max.in.flight.requests.per.connection (default 5)\n"
                    + "  --compression C    compression.type: none, gzip, snappy, lz4, zstd"
                    + " (default none)\n"
                    + "  --rate R           records/s over all producers (default 0 ="
                    + " unlimited)\n"
                    + "  --duration-s D     seconds to produce (default 10)\n"
                    + "  --records N        produce exactly N records (acknowledged), then stop;"
                    + "\n"
                    + "                     record i carries i in its first 8 bytes\n"
                    + "\n"
                    + "Prints producer throughput every second, then a RESULT line and one JSON"
                    + " line\n"
                    + "(records/s, MB/s of record bytes with 1 MB = 10^6 B, CPU seconds of this"
                    + " process).\n";

    private static final Set<String> SWITCHES = Set.of("create", "help");
    private static final Set<String> VALUED =
            Set.of(
                    "broker",
                    "topic",
                    "producers",
                    "partitions",
                    "chunk-size",
                    "record-size",
                    "linger-ms",
                    "acks",
                    "inflight",
                    "compression",
                    "rate",
                    "duration-s",
                    "records");
    private static final Set<String> ACKS = Set.of("0", "1", "all");
    private static final Set<String> COMPRESSIONS = Set.of("none", "gzip", "snappy", "lz4", "zstd");

    public KafkaPerfOptions {
        require(bootstrapServers != null && !bootstrapServers.isBlank(), "--broker is required");
        require(topic != null && !topic.isBlank(), "--topic is required");
        require(producers >= 1 && producers <= 1024, "--producers must be 1..1024");
        require(partitions >= 0, "--partitions must not be negative");
        require(chunkBytes >= 1, "--chunk-size must be at least 1 byte");
        require(recordBytes >= 1, "--record-size must be at least 1 byte");
        require(lingerMs >= 0, "--linger-ms must not be negative");
        require(ACKS.contains(acks), "--acks must be 0, 1 or all, got " + acks);
        require(inflight >= 1, "--inflight must be at least 1");
        require(
                COMPRESSIONS.contains(compression),
                "--compression must be one of " + COMPRESSIONS + ", got " + compression);
        require(rate >= 0, "--rate must not be negative");
        require(durationSeconds >= 1, "--duration-s must be at least 1");
        require(records >= 0, "--records must not be negative");
    }

    /**
     * Options that produce exactly {@code records} records of {@code recordBytes} bytes into the
     * first {@code partitions} partitions of an existing topic, with the other settings at their
     * defaults ({@code acks=1}, {@code linger.ms=5}).
     */
    public static KafkaPerfOptions exactly(
            String bootstrapServers,
            String topic,
            int producers,
            int partitions,
            long records,
            int recordBytes,
            int chunkBytes) {
        require(records >= 1, "records must be at least 1");
        return new KafkaPerfOptions(
                bootstrapServers,
                topic,
                false,
                producers,
                partitions,
                chunkBytes,
                recordBytes,
                5,
                "1",
                5,
                "none",
                0,
                10,
                records);
    }

    /**
     * Parses the command line; {@code null} when it asks for {@code --help}.
     *
     * @throws IllegalArgumentException with a message for the user when a flag is wrong
     */
    public static KafkaPerfOptions parse(String... args) {
        Map<String, String> flags = new HashMap<>();
        List<String> positional = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (!arg.startsWith("--")) {
                positional.add(arg);
                continue;
            }
            String name = arg.substring(2);
            String value = null;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            }
            if (SWITCHES.contains(name)) {
                require(value == null, "--" + name + " takes no value");
                flags.put(name, "true");
            } else if (VALUED.contains(name)) {
                if (value == null) {
                    require(i + 1 < args.length, "--" + name + " needs a value");
                    value = args[++i];
                }
                flags.put(name, value);
            } else {
                throw new IllegalArgumentException("unknown flag --" + name);
            }
        }
        require(positional.isEmpty(), "unexpected argument '" + positional + "'");
        if (flags.containsKey("help")) {
            return null;
        }
        boolean create = flags.containsKey("create");
        require(
                !(flags.containsKey("records") && flags.containsKey("duration-s")),
                "give --records or --duration-s, not both");
        return new KafkaPerfOptions(
                flags.get("broker"),
                flags.get("topic"),
                create,
                (int) number(flags, "producers", 1),
                (int) number(flags, "partitions", create ? 1 : 0),
                (int) size(flags, "chunk-size", 16 << 10),
                (int) size(flags, "record-size", 100),
                (int) number(flags, "linger-ms", 5),
                flags.getOrDefault("acks", "1").toLowerCase(Locale.ROOT),
                (int) number(flags, "inflight", 5),
                flags.getOrDefault("compression", "none").toLowerCase(Locale.ROOT),
                number(flags, "rate", 0),
                (int) number(flags, "duration-s", 10),
                number(flags, "records", 0));
    }

    /** Whether the run stops after {@link #records()} records rather than after a duration. */
    public boolean countsRecords() {
        return records > 0;
    }

    private static long number(Map<String, String> flags, String name, long fallback) {
        String v = flags.get(name);
        if (v == null) {
            return fallback;
        }
        try {
            long n = Long.parseLong(v);
            require(
                    n <= Integer.MAX_VALUE || name.equals("rate") || name.equals("records"),
                    "--" + name + " is too large: " + v);
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + name + " must be a number, got '" + v + "'");
        }
    }

    /** A byte count with an optional K or M suffix (powers of 1024). */
    private static long size(Map<String, String> flags, String name, long fallback) {
        String v = flags.get(name);
        if (v == null) {
            return fallback;
        }
        String digits = v;
        long unit = 1;
        char last = Character.toUpperCase(v.isEmpty() ? ' ' : v.charAt(v.length() - 1));
        if (last == 'K' || last == 'M') {
            unit = last == 'K' ? 1 << 10 : 1 << 20;
            digits = v.substring(0, v.length() - 1);
        }
        try {
            long n = Long.parseLong(digits) * unit;
            require(n <= Integer.MAX_VALUE, "--" + name + " is too large: " + v);
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "--"
                            + name
                            + " must be a byte count such as 16384, 16K or 1M, got '"
                            + v
                            + "'");
        }
    }

    private static void require(boolean condition, String message) {
        if (!condition) {
            throw new IllegalArgumentException(message);
        }
    }
}
