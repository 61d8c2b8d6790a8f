package io.nearstream.benchmarks.workloads;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** The YSB query on a fixed, known event set: every campaign window count checked exactly. */
class YsbPipelineITCase {

    @RegisterExtension
    static final MiniClusterExtension FLINK =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    private static final long START_MS = 1_700_000_000_000L; // a multiple of 10 s
    private static final int EVENTS = 30_000;
    private static final long SPACING_MS = 7; // 30 000 events over 210 s: 21 windows

    @TempDir Path tmp;

    @Test
    void countsViewsPerCampaignAndWindow() throws Exception {
        Path table = tmp.resolve("campaigns.csv");
        YsbReference reference = YsbReference.withTable(table, 11, EVENTS, START_MS, SPACING_MS);
        List<byte[]> events = reference.events;
        long views = reference.views;
        assertThat(views).isBetween(EVENTS / 3L - 500, EVENTS / 3L + 500);

        Path out = tmp.resolve("windows");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        DataStream<byte[]> source =
                env.fromData(events, PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);
        YsbPipeline.campaignWindowCounts(
                        source,
                        YsbCampaigns.read(table).adToCampaign(),
                        YsbPipeline.DEFAULT_OUT_OF_ORDERNESS)
                .sinkTo(new YsbWindowSink(out));
        env.execute("ysb");

        List<CampaignWindowCount> windows = YsbSummary.read(out);
        reference.assertExactlyOnceEach(windows);
        assertThat(YsbSummary.of(windows, reference.viewsPerWindow).toJson())
                .contains("\"campaigns\":100")
                .contains("\"views\":" + views)
                .contains("\"complete\":true,\"fired_windows_exact\":true");
    }
}
