package io.nearstream.benchmarks.jobs;

import java.io.Serializable;
import java.util.Map;

/**
 * What one benchmark job reads and how: the workload, the source mode, the broker and stream, the
 * parallelism of the whole job, and the source settings. Serializable: the sources and functions
 * built from it are shipped with the job graph.
 *
 * @param workload {@code count} or {@code filter} (see {@link Workload#named})
 * @param expectedRecords the records the stream holds; the job fails its check when it reads a
 *     different number (0: not checked)
 * @param filterPattern what {@link FilterWorkload} looks for in each record
 */
public record JobOptions(
        String workload,
        SourceMode mode,
        String broker,
        String stream,
        int parallelism,
        long expectedRecords,
        int fetchBytesPerStreamlet,
        int pushSlotsPerRing,
        int pushSlotBytes,
        String filterPattern,
        boolean unbounded,
        Map<String, String> params)
        implements Serializable {

    /** A bounded job (reads the stream up to its tail at job start) without workload parameters. */
    public JobOptions(
            String workload,
            SourceMode mode,
            String broker,
            String stream,
            int parallelism,
            long expectedRecords,
            int fetchBytesPerStreamlet,
            int pushSlotsPerRing,
            int pushSlotBytes,
            String filterPattern) {
        this(
                workload,
                mode,
                broker,
                stream,
                parallelism,
                expectedRecords,
                fetchBytesPerStreamlet,
                pushSlotsPerRing,
                pushSlotBytes,
                filterPattern,
                false,
                Map.of());
    }

    /**
     * A bounded job with the default source settings ({@link #DEFAULT_FETCH_BYTES}, {@link
     * #DEFAULT_PUSH_SLOTS} of {@link #DEFAULT_PUSH_SLOT_BYTES}), no filter pattern, and workload
     * parameters.
     */
    public static JobOptions bounded(
            String workload,
            SourceMode mode,
            String broker,
            String stream,
            int parallelism,
            long expectedRecords,
            Map<String, String> params) {
        return new JobOptions(
                workload,
                mode,
                broker,
                stream,
                parallelism,
                expectedRecords,
                DEFAULT_FETCH_BYTES,
                DEFAULT_PUSH_SLOTS,
                DEFAULT_PUSH_SLOT_BYTES,
                "",
                false,
                params);
    }

    /** A workload parameter ({@code --NAME VALUE} flags the runner passes on), or the default. */
    public String param(String name, String defaultValue) {
        return params.getOrDefault(name, defaultValue);
    }

    public static final int DEFAULT_FETCH_BYTES = 1024 * 1024;
    public static final int DEFAULT_PUSH_SLOTS = 8;
    public static final int DEFAULT_PUSH_SLOT_BYTES = 1024 * 1024;

    /** The same job in another mode. */
    public JobOptions withMode(SourceMode m) {
        return new JobOptions(
                workload,
                m,
                broker,
                stream,
                parallelism,
                expectedRecords,
                fetchBytesPerStreamlet,
                pushSlotsPerRing,
                pushSlotBytes,
                filterPattern,
                unbounded,
                params);
    }

    /** The same job reading {@code stream} (a topic in Kafka mode) from {@code broker}. */
    public JobOptions withSource(String broker, String stream) {
        return new JobOptions(
                workload,
                mode,
                broker,
                stream,
                parallelism,
                expectedRecords,
                fetchBytesPerStreamlet,
                pushSlotsPerRing,
                pushSlotBytes,
                filterPattern,
                unbounded,
                params);
    }

    /** The same job at another parallelism. */
    public JobOptions withParallelism(int p) {
        return new JobOptions(
                workload,
                mode,
                broker,
                stream,
                p,
                expectedRecords,
                fetchBytesPerStreamlet,
                pushSlotsPerRing,
                pushSlotBytes,
                filterPattern,
                unbounded,
                params);
    }
}
