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
