package io.nearstream.benchmarks.jobs;

import io.nearstream.benchmarks.workloads.CampaignWindowCount;
import io.nearstream.benchmarks.workloads.YsbCampaigns;
import io.nearstream.benchmarks.workloads.YsbPipeline;
import io.nearstream.benchmarks.workloads.YsbWindowSink;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.apache.flink.streaming.api.datastream.DataStream;

/**
 * The Yahoo Streaming Benchmark query ({@link YsbPipeline#campaignWindowCounts}) over the JSON ad
 * events {@code YsbProducer} writes: records in are events, records out are the (campaign, 10 s
 * window) results, which go as CSV to {@code --output-dir} ({@link YsbWindowSink}; read them with
 * {@code YsbSummary}) and/or, with {@code --output-stream NAME}, to that stream, one record per
 * (campaign, window) holding the same CSV row ({@link CampaignWindowCount#toCsv()}, {@link
 * StreamOutput}). {@code --ysb-campaigns FILE} is the producer's ad -> campaign table, {@code
 * --out-of-orderness-ms} the watermark bound (default 1000).
 */
public final class YsbWorkload implements Workload {

    public static final String NAME = "ysb";

    static final String CAMPAIGNS = "ysb-campaigns";
    static final String OUT_OF_ORDERNESS_MS = "out-of-orderness-ms";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public void addTo(DataStream<byte[]> records, JobOptions options) {
        addOutputs(results(records, options), options);
    }

    /** The window results of the YSB query over {@code records}, metered in and out. */
    static DataStream<CampaignWindowCount> results(DataStream<byte[]> records, JobOptions options) {
        return YsbPipeline.campaignWindowCounts(
                        records.map(new MeterIn()).name("meter in"),
                        adToCampaign(options),
                        outOfOrderness(options))
                .map(new MeterOut<CampaignWindowCount>())
                .name("meter out");
    }

    /**
     * The sinks of the window results: CSV files in {@code --output-dir}, records of {@code
     * --output-stream}, or both.
     */
    static void addOutputs(DataStream<CampaignWindowCount> results, JobOptions options) {
        Path out = WordCountWorkload.outputDir(options, NAME);
        if (out != null) {
            results.sinkTo(new YsbWindowSink(out)).name("window results to " + out);
        }
        if (StreamOutput.requested(options)) {
            results.sinkTo(
                            StreamOutput.<CampaignWindowCount>sink(
                                    options, CampaignWindowCount::toCsv, r -> r.campaignId))
                    .name("window results " + StreamOutput.describe(options));
        }
    }

    private static Map<String, String> adToCampaign(JobOptions options) {
        String file = options.param(CAMPAIGNS, "");
        if (file.isEmpty()) {
            throw new IllegalArgumentException(
                    "workload ysb needs the producer's ad -> campaign table: give --"
                            + CAMPAIGNS
                            + " FILE");
        }
        try {
            return YsbCampaigns.read(Path.of(file)).adToCampaign();
        } catch (IOException e) {
            throw new UncheckedIOException("--" + CAMPAIGNS + " " + file, e);
        }
    }

    private static Duration outOfOrderness(JobOptions options) {
        String ms =
                options.param(
                        OUT_OF_ORDERNESS_MS,
                        Long.toString(YsbPipeline.DEFAULT_OUT_OF_ORDERNESS.toMillis()));
        try {
            long v = Long.parseLong(ms);
            if (v < 0) {
                throw new NumberFormatException();
            }
            return Duration.ofMillis(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "--" + OUT_OF_ORDERNESS_MS + " must be a whole number >= 0, got '" + ms + "'");
        }
    }
}
