package io.nearstream.benchmarks.workloads;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
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
        YsbCampaigns campaigns = YsbCampaigns.generate(11);
        Path table = tmp.resolve("campaigns.csv");
        campaigns.write(table);
        YsbEventGenerator generator = new YsbEventGenerator(campaigns.ads(), 12);
        List<byte[]> events = new ArrayList<>();
        // Expected (campaign, window end) -> {views, max event time}, from the generator's record.
        Map<String, long[]> expected = new HashMap<>();
        long views = 0;
        SortedMap<Long, Long> viewsPerWindow = new TreeMap<>();
        for (int i = 0; i < EVENTS; i++) {
            long t = START_MS + i * SPACING_MS;
            events.add(generator.next(t));
            if (generator.lastEventType().equals("view")) {
                views++;
                String campaign = campaigns.adToCampaign().get(generator.lastAdId());
                long end = t - t % 10_000 + 10_000;
                viewsPerWindow.merge(end, 1L, Long::sum);
                long[] e = expected.computeIfAbsent(campaign + "@" + end, k -> new long[2]);
                e[0]++;
                e[1] = Math.max(e[1], t);
            }
        }
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
        Map<String, long[]> actual = new HashMap<>();
        for (CampaignWindowCount w : windows) {
            assertThat(
                            actual.put(
                                    w.campaignId + "@" + w.windowEnd,
                                    new long[] {w.count, w.maxEventTime}))
                    .as("one result per campaign and window")
                    .isNull();
        }
        assertThat(actual).hasSameSizeAs(expected);
        expected.forEach((key, e) -> assertThat(actual.get(key)).as(key).containsExactly(e));
        assertThat(YsbSummary.of(windows, viewsPerWindow).toJson())
                .contains("\"campaigns\":100")
                .contains("\"views\":" + views)
                .contains("\"complete\":true,\"fired_windows_exact\":true");
    }
}
