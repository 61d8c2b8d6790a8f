package io.nearstream.benchmarks.jobs;

import io.nearstream.benchmarks.kafka.KafkaSources;
import io.nearstream.client.SlotFormat;
import io.nearstream.flink.source.NearstreamSource;
import io.nearstream.flink.source.NearstreamSourceBuilder;
import io.nearstream.flink.source.NearstreamStoppingPositions;
import io.nearstream.flink.source.ReadMode;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import java.util.Arrays;
import java.util.Locale;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * Where a benchmark job reads its records from: each mode builds a source of {@code byte[]} record
 * values that stops at what the stream holds when the job starts, so every job ends - or, for a
 * timed job ({@link JobOptions#unbounded()}), one that reads on until the job is cancelled.
 *
 * <p>A mode is one constant with its own {@link #source}; the workloads and the runner do not
 * change.
 */
public enum SourceMode {
    /** The Nearstream source in {@link ReadMode#PULL}: fetch RPCs. */
    PULL {
        @Override
        public DataStream<byte[]> source(StreamExecutionEnvironment env, JobOptions options) {
            return nearstream(env, options, ReadMode.PULL);
        }
    },

    /** The Nearstream source in {@link ReadMode#PUSH}: shared-memory slots filled by the broker. */
    PUSH {
        @Override
        public DataStream<byte[]> source(StreamExecutionEnvironment env, JobOptions options) {
            return nearstream(env, options, ReadMode.PUSH);
        }
    },

    /**
     * The Nearstream source in {@link ReadMode#AUTO}: push where the reader runs on the broker's
     * host; over a broker cluster ({@code --broker} a bootstrap list), push for the streamlets of
     * each reader's host broker and fetch RPCs for the others.
     */
    AUTO {
        @Override
        public DataStream<byte[]> source(StreamExecutionEnvironment env, JobOptions options) {
            return nearstream(env, options, ReadMode.AUTO);
        }
    },

    /**
     * Flink's Kafka source (flink-connector-kafka) with {@code --broker} as the bootstrap servers
     * and {@code --stream} as the topic, from the earliest offsets; bounded by the latest offsets
     * at job start unless the job is timed.
     */
    KAFKA {
        @Override
        public DataStream<byte[]> source(StreamExecutionEnvironment env, JobOptions options) {
            KafkaSource<byte[]> source =
                    options.unbounded()
                            ? KafkaSources.continuous(options.broker(), options.stream())
                            : KafkaSources.bounded(options.broker(), options.stream());
            return env.fromSource(source, Workload.named(options.workload()).watermarks(), "kafka");
        }
    };

    /**
     * {@code --push-slot-format binary|binary-view}: how push slots carry records (the source's
     * {@code setPushSlotFormat}; default binary).
     */
    public static final String PUSH_SLOT_FORMAT = "push-slot-format";

    /** Adds this mode's bounded source of record values to {@code env}. */
    public abstract DataStream<byte[]> source(StreamExecutionEnvironment env, JobOptions options);

    /** The mode named {@code name} (case-insensitive). */
    public static SourceMode parse(String name) {
        for (SourceMode m : values()) {
            if (m.name().equalsIgnoreCase(name)) {
                return m;
            }
        }
        throw new IllegalArgumentException(
                "unknown mode '"
                        + name
                        + "', expected one of "
                        + Arrays.toString(values()).toLowerCase(Locale.ROOT));
    }

    /** Lower-case name, as on the command line and in results. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    private static DataStream<byte[]> nearstream(
            StreamExecutionEnvironment env, JobOptions options, ReadMode readMode) {
        NearstreamSourceBuilder<byte[]> builder =
                NearstreamSource.<byte[]>builder()
                        .setBrokers(options.broker())
                        .setStream(options.stream())
                        .setReadMode(readMode)
                        .setFetchMaxBytesPerStreamlet(options.fetchBytesPerStreamlet())
                        .setPushSlots(options.pushSlotsPerRing(), options.pushSlotBytes())
                        .setRecordFilter(
                                SourceFilterFlag.parse(options.param(SourceFilterFlag.NAME, "")))
                        .setPushSlotFormat(
                                SlotFormat.parse(options.param(PUSH_SLOT_FORMAT, "binary")))
                        .setDeserializer(NearstreamRecordDeserializationSchema.bytes());
        if (!options.unbounded()) {
            builder.setBounded(NearstreamStoppingPositions.latest());
        }
        NearstreamSource<byte[]> source = builder.build();
        return env.fromSource(
                source,
                Workload.named(options.workload()).watermarks(),
                "nearstream-" + readMode.name());
    }
}
