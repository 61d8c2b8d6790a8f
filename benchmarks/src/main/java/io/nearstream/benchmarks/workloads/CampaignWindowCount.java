package io.nearstream.benchmarks.workloads;

import java.util.Objects;

/**
 * One YSB result: the {@code view} events of one campaign in one 10 s event-time window, with the
 * times needed for the window latency.
 */
public class CampaignWindowCount {

    /** The campaign id. */
    public String campaignId;

    /** The window's end, exclusive, epoch milliseconds of event time. */
    public long windowEnd;

    /** View events of the campaign in the window. */
    public long count;

    /** The largest {@code event_time} among them. */
    public long maxEventTime;

    /** Wall-clock time when the window operator emitted this result, epoch milliseconds. */
    public long emittedAt;

    /** For Flink's POJO serializer. */
    public CampaignWindowCount() {}

    public CampaignWindowCount(
            String campaignId, long windowEnd, long count, long maxEventTime, long emittedAt) {
        this.campaignId = campaignId;
        this.windowEnd = windowEnd;
        this.count = count;
        this.maxEventTime = maxEventTime;
        this.emittedAt = emittedAt;
    }

    /**
     * The result as one line of {@link YsbSummary#CSV_HEADER}'s columns, no newline: {@code
     * campaign_id,window_end,count,max_event_time,emitted_at,latency_ms}. The row of the CSV files
     * ({@link YsbWindowSink}) and the value of a record in an output stream.
     */
    public String toCsv() {
        return campaignId
                + ","
                + windowEnd
                + ","
                + count
                + ","
                + maxEventTime
                + ","
                + emittedAt
                + ","
                + latencyMs();
    }

    /**
     * Parses a line {@link #toCsv} wrote (the derived {@code latency_ms} column may be absent).
     *
     * @throws IllegalArgumentException when it is not one
     */
    public static CampaignWindowCount parseCsv(String line) {
        String[] f = line.split(",");
        if (f.length < 5 || f.length > 6 || f[0].isEmpty()) {
            throw new IllegalArgumentException("not a YSB window row: " + line);
        }
        try {
            return new CampaignWindowCount(
                    f[0],
                    Long.parseLong(f[1]),
                    Long.parseLong(f[2]),
                    Long.parseLong(f[3]),
                    Long.parseLong(f[4]));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a YSB window row: " + line, e);
        }
    }

    /** YSB's window latency: emission time minus window end. */
    public long latencyMs() {
        return emittedAt - windowEnd;
    }

    /**
     * The event-time latency of AIR (Venugopal et al.) for a windowed event: emission time minus
     * the largest event time in the window.
     */
    public long eventTimeLatencyMs() {
        return emittedAt - maxEventTime;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof CampaignWindowCount)) {
            return false;
        }
        CampaignWindowCount other = (CampaignWindowCount) o;
        return windowEnd == other.windowEnd
                && count == other.count
                && maxEventTime == other.maxEventTime
                && emittedAt == other.emittedAt
                && campaignId.equals(other.campaignId);
    }

    @Override
    public int hashCode() {
        return Objects.hash(campaignId, windowEnd, count, maxEventTime, emittedAt);
    }

    @Override
    public String toString() {
        return campaignId + "@" + windowEnd + "=" + count + " (latency " + latencyMs() + " ms)";
    }
}
