package io.nearstream.benchmarks.jobs;

import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.streaming.api.datastream.DataStream;

/**
 * A benchmark job's operators after the source, and how to read its result back: the operators end
 * in a sink and report what they saw through Flink accumulators ({@link RecordMeter}), which {@link
 * #result} turns into a {@link WorkloadResult}.
 */
public interface Workload {

    /**
     * Workload-specific flags JobRunner accepts and hands on ({@link JobOptions#param}), those of
     * {@link StreamOutput} included.
     */
    List<String> PARAMS =
            Stream.concat(
                            Stream.of(
                                    WordCountWorkload.OUTPUT_DIR,
                                    YsbWorkload.CAMPAIGNS,
                                    YsbWorkload.OUT_OF_ORDERNESS_MS,
                                    SourceFilterFlag.NAME,
                                    SourceMode.PUSH_SLOT_FORMAT),
                            StreamOutput.PARAMS.stream())
                    .toList();

    /** The name on the command line and in results. */
    String name();

    /**
     * The watermarks the source must generate (the mode's source is built with them): none unless
     * the workload's windows run on the records' own timestamps.
     */
    default WatermarkStrategy<byte[]> watermarks() {
        return WatermarkStrategy.noWatermarks();
    }

    /** Adds the workload's operators (ending in a sink) after {@code records}. */
    void addTo(DataStream<byte[]> records, JobOptions options);

    /** The job's result, from the accumulators of a finished job. */
    default WorkloadResult result(JobExecutionResult execution) {
        return WorkloadResult.of(execution);
    }

    /**
     * {@code count} ({@link CountWorkload}), {@code filter} ({@link FilterWorkload}), {@code
     * wordcount} ({@link WordCountWorkload}), {@code windowed-wordcount} ({@link
     * WindowedWordCountWorkload}) or {@code ysb} ({@link YsbWorkload}).
     */
    static Workload named(String name) {
        switch (name.toLowerCase(Locale.ROOT)) {
            case CountWorkload.NAME:
                return new CountWorkload();
            case FilterWorkload.NAME:
                return new FilterWorkload();
            case WordCountWorkload.NAME:
                return new WordCountWorkload();
            case WindowedWordCountWorkload.NAME:
                return new WindowedWordCountWorkload();
            case YsbWorkload.NAME:
                return new YsbWorkload();
            default:
                throw new IllegalArgumentException(
                        "unknown workload '"
                                + name
                                + "', expected one of "
                                + List.of(
                                        CountWorkload.NAME,
                                        FilterWorkload.NAME,
                                        WordCountWorkload.NAME,
                                        WindowedWordCountWorkload.NAME,
                                        YsbWorkload.NAME));
        }
    }
}
