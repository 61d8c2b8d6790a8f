package io.nearstream.benchmarks.workloads;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NettyNearstreamClient;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import javax.annotation.Nullable;

/**
 * What a YSB run achieved, from its window results: windows and view events counted, the rate of
 * counted views over the event time the windows span, and the window latency (YSB's: emission minus
 * window end; and the event-time latency of AIR (Venugopal et al.): emission minus the window's
 * largest event time) at p50, p99 and max, nearest-rank.
 *
 * <p>Given the views the producers made per window ({@link YsbProducer}'s {@code --views-file}),
 * {@code complete} says whether every one was counted, and {@code fired_windows_exact} whether
 * every window that fired counted exactly the views made in it — the check for a live run, whose
 * last windows never fire once the producers stop; {@code views_missing_in_fired_windows} is how
 * many were dropped as late or lost there.
 *
 * <p>Sustainable throughput is the highest producer rate at which the fired windows are exact and
 * the latency stays bounded; it takes a sweep over rates, one summary per rate.
 *
 * <pre>
 * java -cp benchmarks.jar io.nearstream.benchmarks.workloads.YsbSummary DIR [VIEWS_FILE]
 * java -cp benchmarks.jar io.nearstream.benchmarks.workloads.YsbSummary --stream HOST:PORT/STREAM [VIEWS_FILE]
 * </pre>
 */
public final class YsbSummary {

    public static final String CSV_HEADER =
            "campaign_id,window_end,count,max_event_time,emitted_at,latency_ms";

    static final String PART_PREFIX = "ysb-windows-";
    static final String PART_SUFFIX = ".csv";

    static final String VIEWS_HEADER = "window_end,views";

    private final List<CampaignWindowCount> windows;
    @Nullable private final SortedMap<Long, Long> producedViews;

    private YsbSummary(
            List<CampaignWindowCount> windows, @Nullable SortedMap<Long, Long> producedViews) {
        this.windows = windows;
        this.producedViews = producedViews;
    }

    /** A summary of {@code windows} alone. */
    public static YsbSummary of(List<CampaignWindowCount> windows) {
        return new YsbSummary(List.copyOf(windows), null);
    }

    /**
     * A summary of {@code windows} checked against the views produced per window end ({@link
     * YsbProducer.Result#viewsPerWindow()}).
     */
    public static YsbSummary of(
            List<CampaignWindowCount> windows, SortedMap<Long, Long> producedViewsPerWindow) {
        return new YsbSummary(List.copyOf(windows), new TreeMap<>(producedViewsPerWindow));
    }

    /** Writes views per window end as "window_end,views" lines after a header. */
    public static void writeProducedViews(Path file, Map<Long, Long> viewsPerWindow)
            throws IOException {
        List<String> lines = new ArrayList<>();
        lines.add(VIEWS_HEADER);
        new TreeMap<>(viewsPerWindow).forEach((end, n) -> lines.add(end + "," + n));
        Files.write(file, lines, StandardCharsets.US_ASCII);
    }

    /** Reads a file {@link #writeProducedViews} wrote. */
    public static SortedMap<Long, Long> readProducedViews(Path file) throws IOException {
        List<String> lines = Files.readAllLines(file, StandardCharsets.US_ASCII);
        if (lines.isEmpty() || !lines.get(0).equals(VIEWS_HEADER)) {
            throw new IOException(file + ": first line must be " + VIEWS_HEADER);
        }
        SortedMap<Long, Long> views = new TreeMap<>();
        for (int i = 1; i < lines.size(); i++) {
            String[] f = lines.get(i).split(",");
            try {
                views.put(Long.parseLong(f[0]), Long.parseLong(f[1]));
            } catch (RuntimeException e) {
                throw new IOException(
                        file + " line " + (i + 1) + ": expected \"window_end,views\"", e);
            }
        }
        return views;
    }

    static Path partFile(Path directory, int subtask) {
        return directory.resolve(PART_PREFIX + subtask + PART_SUFFIX);
    }

    /** Reads every file a {@link YsbWindowSink} wrote into {@code directory}. */
    public static List<CampaignWindowCount> read(Path directory) throws IOException {
        List<CampaignWindowCount> windows = new ArrayList<>();
        int parts = 0;
        try (DirectoryStream<Path> files =
                Files.newDirectoryStream(directory, PART_PREFIX + "*" + PART_SUFFIX)) {
            for (Path file : files) {
                parts++;
                List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
                for (int i = 1; i < lines.size(); i++) {
                    try {
                        windows.add(CampaignWindowCount.parseCsv(lines.get(i)));
                    } catch (IllegalArgumentException e) {
                        throw new IOException(
                                file
                                        + " line "
                                        + (i + 1)
                                        + ": not a YSB window row: "
                                        + lines.get(i),
                                e);
                    }
                }
            }
        }
        if (parts == 0) {
            throw new IOException(
                    "no " + PART_PREFIX + "*" + PART_SUFFIX + " files in " + directory);
        }
        return windows;
    }

    public long windows() {
        return windows.size();
    }

    public long views() {
        return windows.stream().mapToLong(w -> w.count).sum();
    }

    /** Nearest-rank percentile of {@link CampaignWindowCount#latencyMs()}; 0 without windows. */
    public long latencyPercentile(double p) {
        return percentile(windows.stream().mapToLong(CampaignWindowCount::latencyMs).toArray(), p);
    }

    /** Nearest-rank percentile of {@link CampaignWindowCount#eventTimeLatencyMs()}. */
    public long eventTimeLatencyPercentile(double p) {
        return percentile(
                windows.stream().mapToLong(CampaignWindowCount::eventTimeLatencyMs).toArray(), p);
    }

    static long percentile(long[] values, double p) {
        if (values.length == 0) {
            return 0;
        }
        java.util.Arrays.sort(values);
        int rank = (int) Math.ceil(p / 100.0 * values.length);
        return values[Math.max(0, Math.min(values.length - 1, rank - 1))];
    }

    /** The summary as one JSON line. */
    public String toJson() {
        Set<String> campaigns = new HashSet<>();
        long firstEnd = Long.MAX_VALUE;
        long lastEnd = Long.MIN_VALUE;
        for (CampaignWindowCount w : windows) {
            campaigns.add(w.campaignId);
            firstEnd = Math.min(firstEnd, w.windowEnd);
            lastEnd = Math.max(lastEnd, w.windowEnd);
        }
        double spanSeconds =
                windows.isEmpty()
                        ? 0
                        : (lastEnd - firstEnd + YsbPipeline.WINDOW.toMillis()) / 1000.0;
        StringBuilder json = new StringBuilder();
        json.append(
                String.format(
                        Locale.ROOT,
                        "{\"windows\":%d,\"campaigns\":%d,\"views\":%d,\"event_time_span_s\":%.0f,"
                                + "\"views_per_s\":%.0f,\"latency_ms\":{\"p50\":%d,\"p99\":%d,"
                                + "\"max\":%d},\"event_time_latency_ms\":{\"p50\":%d,\"p99\":%d,"
                                + "\"max\":%d}",
                        windows.size(),
                        campaigns.size(),
                        views(),
                        spanSeconds,
                        spanSeconds == 0 ? 0 : views() / spanSeconds,
                        latencyPercentile(50),
                        latencyPercentile(99),
                        latencyPercentile(100),
                        eventTimeLatencyPercentile(50),
                        eventTimeLatencyPercentile(99),
                        eventTimeLatencyPercentile(100)));
        if (producedViews != null) {
            long produced = producedViews.values().stream().mapToLong(Long::longValue).sum();
            Map<Long, Long> counted = new TreeMap<>();
            windows.forEach(w -> counted.merge(w.windowEnd, w.count, Long::sum));
            long missing = 0;
            boolean exact = true;
            for (Map.Entry<Long, Long> e : counted.entrySet()) {
                long made = producedViews.getOrDefault(e.getKey(), 0L);
                missing += made - e.getValue();
                exact &= made == e.getValue();
            }
            json.append(",\"produced_views\":")
                    .append(produced)
                    .append(",\"complete\":")
                    .append(views() == produced && exact)
                    .append(",\"fired_windows_exact\":")
                    .append(exact)
                    .append(",\"views_missing_in_fired_windows\":")
                    .append(missing);
        }
        return json.append('}').toString();
    }

    /**
     * Reads the window results an output stream holds ({@code JobRunner --output-stream}: one
     * {@link CampaignWindowCount#toCsv()} record per result), waiting until none has come for 2 s.
     */
    public static List<CampaignWindowCount> readStream(NearstreamClient client, String stream)
            throws Exception {
        List<CampaignWindowCount> windows = new ArrayList<>();
        for (String r : ResultRecords.readAll(client, stream, Duration.ofSeconds(2))) {
            windows.add(CampaignWindowCount.parseCsv(r));
        }
        return windows;
    }

    public static void main(String[] args) throws Exception {
        boolean fromStream = args.length > 0 && args[0].equals("--stream");
        int first = fromStream ? 2 : 1;
        if (args.length < first || args.length > first + 1) {
            System.err.println(
                    "usage: YsbSummary RESULTS_DIR [VIEWS_FILE]\n"
                            + "       YsbSummary --stream HOST:PORT/STREAM [VIEWS_FILE]");
            System.exit(2);
        }
        List<CampaignWindowCount> windows;
        if (fromStream) {
            int slash = args[1].lastIndexOf('/');
            if (slash <= 0 || slash == args[1].length() - 1) {
                System.err.println("YsbSummary: --stream takes HOST:PORT/STREAM, got " + args[1]);
                System.exit(2);
            }
            try (NearstreamClient client =
                    NettyNearstreamClient.connect(args[1].substring(0, slash))) {
                windows = readStream(client, args[1].substring(slash + 1));
            }
        } else {
            windows = read(Path.of(args[0]));
        }
        YsbSummary summary =
                args.length == first + 1
                        ? YsbSummary.of(windows, readProducedViews(Path.of(args[first])))
                        : YsbSummary.of(windows);
        System.out.println(summary.toJson());
        System.exit(0); // Netty leaves non-daemon threads behind
    }
}
