package io.nearstream.benchmarks.workloads;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class YsbSummaryTest {

    @Test
    void nearestRankPercentiles() {
        long[] values = new long[100];
        for (int i = 0; i < 100; i++) {
            values[i] = 100 - i; // 1..100, unsorted
        }
        assertThat(YsbSummary.percentile(values.clone(), 50)).isEqualTo(50);
        assertThat(YsbSummary.percentile(values.clone(), 99)).isEqualTo(99);
        assertThat(YsbSummary.percentile(values.clone(), 100)).isEqualTo(100);
        assertThat(YsbSummary.percentile(new long[] {7}, 99)).isEqualTo(7);
        assertThat(YsbSummary.percentile(new long[0], 99)).isZero();
    }

    @Test
    void summarizesWhatTheSinkFilesHold() throws Exception {
        List<CampaignWindowCount> windows = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            // Window ends 10 s apart, latency 100 + 10 i ms, event-time latency 1 s more.
            long end = 1_000_000 + 10_000L * i;
            windows.add(
                    new CampaignWindowCount(
                            "c" + (i % 2), end, 3, end - 1_000, end + 100 + 10 * i));
        }
        SortedMap<Long, Long> produced = new TreeMap<>();
        windows.forEach(w -> produced.put(w.windowEnd, 3L));
        assertThat(YsbSummary.of(windows, produced).toJson())
                .isEqualTo(
                        "{\"windows\":10,\"campaigns\":2,\"views\":30,\"event_time_span_s\":100,"
                                + "\"views_per_s\":0,\"latency_ms\":{\"p50\":140,\"p99\":190,"
                                + "\"max\":190},\"event_time_latency_ms\":{\"p50\":1140,"
                                + "\"p99\":1190,\"max\":1190},\"produced_views\":30,"
                                + "\"complete\":true,\"fired_windows_exact\":true,"
                                + "\"views_missing_in_fired_windows\":0}");
        assertThat(YsbSummary.of(windows).toJson()).endsWith("\"max\":1190}}");

        // A window that has not fired: incomplete, but every fired window is exact.
        SortedMap<Long, Long> more = new TreeMap<>(produced);
        more.put(2_000_000L, 5L);
        assertThat(YsbSummary.of(windows, more).toJson())
                .endsWith(
                        "\"produced_views\":35,\"complete\":false,\"fired_windows_exact\":true,"
                                + "\"views_missing_in_fired_windows\":0}");

        // A fired window that missed a view (dropped as late).
        SortedMap<Long, Long> late = new TreeMap<>(produced);
        late.put(1_000_000L, 4L);
        assertThat(YsbSummary.of(windows, late).toJson())
                .endsWith(
                        "\"produced_views\":31,\"complete\":false,\"fired_windows_exact\":false,"
                                + "\"views_missing_in_fired_windows\":1}");
    }

    @Test
    void producedViewsFileRoundTrips(@TempDir Path dir) throws Exception {
        SortedMap<Long, Long> views = new TreeMap<>(java.util.Map.of(10_000L, 7L, 20_000L, 9L));
        Path file = dir.resolve("views.csv");
        YsbSummary.writeProducedViews(file, views);
        assertThat(YsbSummary.readProducedViews(file)).isEqualTo(views);
    }

    @Test
    void readsBackCsvParts(@TempDir Path dir) throws Exception {
        java.nio.file.Files.writeString(
                YsbSummary.partFile(dir, 0),
                YsbSummary.CSV_HEADER + "\nc,10000,5,9999,10250,250\n");
        java.nio.file.Files.writeString(
                YsbSummary.partFile(dir, 1),
                YsbSummary.CSV_HEADER + "\nd,10000,2,9000,10300,300\n");
        assertThat(YsbSummary.read(dir))
                .containsExactlyInAnyOrder(
                        new CampaignWindowCount("c", 10_000, 5, 9_999, 10_250),
                        new CampaignWindowCount("d", 10_000, 2, 9_000, 10_300));
    }
}
