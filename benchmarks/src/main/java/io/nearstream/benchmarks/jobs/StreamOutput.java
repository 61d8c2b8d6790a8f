package io.nearstream.benchmarks.jobs;

import io.nearstream.benchmarks.workloads.ResultRecords;
import io.nearstream.benchmarks.workloads.StreamSetup;
import io.nearstream.client.NearstreamClient;
import io.nearstream.flink.sink.NearstreamRecordSerializationSchema;
import io.nearstream.flink.sink.NearstreamSink;
import io.nearstream.flink.sink.NearstreamSinkBuilder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The results of the {@code wordcount}, {@code windowed-wordcount} and {@code ysb} workloads to a
 * Nearstream stream, through the connector's {@link NearstreamSink}, instead of or beside the files
 * of {@code --output-dir}. The records are text lines ({@link ResultRecords}) keyed by word or
 * campaign.
 *
 * <ul>
 *   <li>{@code --output-stream NAME}: the stream; created with {@code --output-streamlets N}
 *       (default 1) streamlets when it does not exist.
 *   <li>{@code --output-guarantee none|at-least-once|exactly-once} (default at-least-once): the
 *       sink's {@link DeliveryGuarantee}. Exactly once writes one broker transaction per checkpoint
 *       and sink subtask, committed when the checkpoint completes, so readers see the results of
 *       completed checkpoints only, each once, also across a restart.
 *   <li>{@code --output-broker HOST:PORT}: the broker of the stream; default {@code --broker} (the
 *       broker the job reads, or the one {@code --preload} starts); required in {@code kafka} mode.
 *   <li>{@code --output-txn-prefix P}: the exactly-once writers' transactional id prefix (default
 *       {@code bench-<workload>-<stream>}); jobs writing to one stream at the same time need their
 *       own.
 *   <li>{@code --checkpoint-interval-ms MS}: checkpoints (exactly-once mode for an exactly-once
 *       output, at-least-once mode otherwise); default 1000 when the results go to a stream, none
 *       otherwise. An exactly-once job's results become visible a checkpoint at a time.
 * </ul>
 */
public final class StreamOutput {

    static final String STREAM = "output-stream";
    static final String GUARANTEE = "output-guarantee";
    static final String BROKER = "output-broker";
    static final String STREAMLETS = "output-streamlets";
    static final String TXN_PREFIX = "output-txn-prefix";
    static final String CHECKPOINT_INTERVAL_MS = "checkpoint-interval-ms";

    /** The flags of this class, among the workload parameters ({@link Workload#PARAMS}). */
    static final List<String> PARAMS =
            List.of(STREAM, GUARANTEE, BROKER, STREAMLETS, TXN_PREFIX, CHECKPOINT_INTERVAL_MS);

    static final long DEFAULT_CHECKPOINT_INTERVAL_MS = 1000;

    private StreamOutput() {}

    /** Whether the job's results go to a stream. */
    static boolean requested(JobOptions options) {
        return !options.param(STREAM, "").isEmpty();
    }

    /** The {@code --output-guarantee}. */
    static DeliveryGuarantee guarantee(JobOptions options) {
        String g = options.param(GUARANTEE, "at-least-once");
        switch (g.toLowerCase(Locale.ROOT)) {
            case "none":
                return DeliveryGuarantee.NONE;
            case "at-least-once":
                return DeliveryGuarantee.AT_LEAST_ONCE;
            case "exactly-once":
                return DeliveryGuarantee.EXACTLY_ONCE;
            default:
                throw new IllegalArgumentException(
                        "--"
                                + GUARANTEE
                                + " must be none, at-least-once or exactly-once, got '"
                                + g
                                + "'");
        }
    }

    /** The broker the results go to. */
    static String broker(JobOptions options) {
        String broker = options.param(BROKER, "");
        if (!broker.isEmpty()) {
            return broker;
        }
        if (options.mode() == SourceMode.KAFKA) {
            throw new IllegalArgumentException(
                    "in kafka mode --broker is Kafka's: give --"
                            + BROKER
                            + " HOST:PORT, the Nearstream broker of --"
                            + STREAM);
        }
        return options.broker();
    }

    /** The checkpoint interval in ms, 0 for none. */
    static long checkpointIntervalMs(JobOptions options) {
        String ms =
                options.param(
                        CHECKPOINT_INTERVAL_MS,
                        requested(options) ? Long.toString(DEFAULT_CHECKPOINT_INTERVAL_MS) : "0");
        try {
            long v = Long.parseLong(ms);
            if (v < 0) {
                throw new NumberFormatException();
            }
            return v;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "--"
                            + CHECKPOINT_INTERVAL_MS
                            + " must be a whole number >= 0, got '"
                            + ms
                            + "'");
        }
    }

    /** Enables the checkpoints the job's options ask for (see the class comment). */
    static void configureCheckpoints(StreamExecutionEnvironment env, JobOptions options) {
        long interval = checkpointIntervalMs(options);
        if (interval > 0) {
            boolean exactlyOnce =
                    requested(options) && guarantee(options) == DeliveryGuarantee.EXACTLY_ONCE;
            env.enableCheckpointing(
                    interval,
                    exactlyOnce ? CheckpointingMode.EXACTLY_ONCE : CheckpointingMode.AT_LEAST_ONCE);
        }
    }

    /** Creates the output stream when it does not exist (nothing without an output stream). */
    static void createStreamIfMissing(JobOptions options) throws Exception {
        if (!requested(options)) {
            return;
        }
        int streamlets;
        try {
            streamlets = Integer.parseInt(options.param(STREAMLETS, "1"));
            if (streamlets <= 0) {
                throw new NumberFormatException();
            }
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "--"
                            + STREAMLETS
                            + " must be > 0, got '"
                            + options.param(STREAMLETS, "")
                            + "'");
        }
        try (NearstreamClient client = NearstreamClient.connect(broker(options))) {
            StreamSetup.ensure(client, options.param(STREAM, ""), streamlets);
        }
    }

    /**
     * The sink of a workload's results: each result becomes the record {@code value} (UTF-8) with
     * the key {@code key} (UTF-8).
     */
    static <T> NearstreamSink<T> sink(JobOptions options, TextOf<T> value, TextOf<T> key) {
        String stream = options.param(STREAM, "");
        DeliveryGuarantee guarantee = guarantee(options);
        NearstreamSinkBuilder<T> builder =
                NearstreamSink.<T>builder()
                        .setBrokers(broker(options))
                        .setStream(stream)
                        .setDeliveryGuarantee(guarantee)
                        .setRecordSerializer(
                                NearstreamRecordSerializationSchema.<T>builder()
                                        .setValueSerializationSchema(utf8(value))
                                        .setKeySerializationSchema(utf8(key))
                                        .build());
        if (guarantee == DeliveryGuarantee.EXACTLY_ONCE) {
            builder.setTransactionalIdPrefix(
                    options.param(TXN_PREFIX, "bench-" + options.workload() + "-" + stream));
        }
        return builder.build();
    }

    /** The name of the sink operator. */
    static String describe(JobOptions options) {
        return "to stream "
                + options.param(STREAM, "")
                + " ("
                + guarantee(options).name().toLowerCase(Locale.ROOT).replace('_', '-')
                + ")";
    }

    /** A result's text: the record's value or key. */
    @FunctionalInterface
    interface TextOf<T> extends java.io.Serializable {
        String text(T result);
    }

    private static <T> SerializationSchema<T> utf8(TextOf<T> text) {
        return r -> text.text(r).getBytes(StandardCharsets.UTF_8);
    }
}
