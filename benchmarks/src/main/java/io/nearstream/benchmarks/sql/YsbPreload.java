package io.nearstream.benchmarks.sql;

import io.nearstream.benchmarks.workloads.CampaignWindowCount;
import io.nearstream.benchmarks.workloads.StreamSetup;
import io.nearstream.benchmarks.workloads.YsbCampaigns;
import io.nearstream.benchmarks.workloads.YsbEventGenerator;
import io.nearstream.benchmarks.workloads.YsbPipeline;
import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NearstreamProducer;
import io.nearstream.client.NearstreamProducerConfig;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

/**
 * YSB events pre-loaded into a stream, for jobs that read all of it as fast as they can: event
 * {@code i} is stamped {@code startMs + i * 1000 / eventsPerSecond} and goes to streamlet {@code i
 * % streamlets}, so every streamlet holds its events in event-time order and a job whose source
 * tasks read one streamlet each drops no event as late, whatever its watermark bound. Records what
 * the query must count: views and the largest event time per (campaign, 10 s window), from the
 * generator's own record of each event, not from parsing it.
 */
final class YsbPreload {

    /** What {@link #load} wrote and what the query must count in it. */
    static final class Expected {
        final long events;
        long views;

        /** {@code campaign@windowEnd} -> {views, largest event time}. */
        final Map<String, long[]> windows = new HashMap<>();

        Expected(long events) {
            this.events = events;
        }

        /**
         * @throws IllegalStateException unless {@code results} hold exactly one result per
         *     (campaign, window) with its views and largest event time, and nothing else
         */
        void check(String job, List<CampaignWindowCount> results) {
            Map<String, long[]> seen = new HashMap<>();
            for (CampaignWindowCount r : results) {
                String key = r.campaignId + "@" + r.windowEnd;
                long[] want = windows.get(key);
                if (want == null || want[0] != r.count || want[1] != r.maxEventTime) {
                    throw new IllegalStateException(
                            job
                                    + ": result "
                                    + r.toCsv()
                                    + " expected "
                                    + (want == null ? "no such window" : want[0] + " views"));
                }
                if (seen.put(key, want) != null) {
                    throw new IllegalStateException(job + ": two results for " + key);
                }
            }
            if (seen.size() != windows.size()) {
                throw new IllegalStateException(
                        job + ": " + seen.size() + " results, expected " + windows.size());
            }
        }
    }

    private YsbPreload() {}

    /**
     * Creates {@code stream} with {@code streamlets} streamlets and writes {@code events} events of
     * {@code campaigns}' ads (drawn from {@code seed}) to it.
     */
    static Expected load(
            NearstreamClient client,
            String stream,
            int streamlets,
            YsbCampaigns campaigns,
            long events,
            long eventsPerSecond,
            long startMs,
            long seed)
            throws Exception {
        StreamSetup.ensure(client, stream, streamlets);
        YsbEventGenerator generator = new YsbEventGenerator(campaigns.ads(), seed);
        Map<String, String> adToCampaign = campaigns.adToCampaign();
        Expected expected = new Expected(events);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        NearstreamProducerConfig config =
                NearstreamProducerConfig.builder(client, stream)
                        .batchSizeBytes(64 * 1024)
                        .linger(Duration.ofMillis(5))
                        .build();
        try (NearstreamProducer producer = new NearstreamProducer(config)) {
            for (long i = 0; i < events && failure.get() == null; i++) {
                long t = startMs + i * 1000 / eventsPerSecond;
                byte[] event = generator.next(t);
                producer.sendTo(
                        (int) (i % streamlets),
                        event,
                        (position, error) -> {
                            if (error != null) {
                                failure.compareAndSet(null, error);
                            }
                        });
                if (generator.lastIsView()) {
                    expected.views++;
                    String key =
                            adToCampaign.get(generator.lastAdId()) + "@" + YsbPipeline.windowEnd(t);
                    long[] w = expected.windows.computeIfAbsent(key, k -> new long[2]);
                    w[0]++;
                    w[1] = Math.max(w[1], t);
                }
            }
            producer.flush();
        }
        if (failure.get() != null) {
            throw new IllegalStateException("an event was not stored", failure.get());
        }
        return expected;
    }
}
