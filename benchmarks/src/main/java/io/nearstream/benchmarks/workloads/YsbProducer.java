package io.nearstream.benchmarks.workloads;

import io.nearstream.benchmarks.jobs.Flags;
import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NearstreamProducerConfig;
import io.nearstream.client.NettyNearstreamClient;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Produces YSB ad events into a Nearstream stream, outside Flink as the benchmark asks: writes the
 * ad -> campaign table for the job ({@code --campaigns FILE}), then {@code --producers} threads,
 * each with its own {@link NearstreamProducer}, make {@code --events} events in total at {@code
 * --rate} events/s in total (0: as fast as they can), stamping each with the wall clock as its
 * {@code event_time}, records spread round-robin over the streamlets. Creates the stream when it
 * does not exist. Prints one JSON line: events, views among them (what the job must count),
 * seconds, achieved rate. With {@code --views-file FILE} it also writes how many views fall in each
 * 10 s window, for {@link YsbSummary} to check every window that fired. With {@code --target kafka}
 * the events go to the Kafka topic {@code --stream} at bootstrap servers {@code --broker} instead.
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar io.nearstream.benchmarks.workloads.YsbProducer \
 *     --broker 127.0.0.1:7420 --stream ysb --streamlets 4 --campaigns /tmp/ysb-campaigns.csv \
 *     --events 10000000 --rate 200000 --producers 2
 * </pre>
 */
public final class YsbProducer {

    private static final Set<String> FLAGS =
            Set.of(
                    "broker",
                    "stream",
                    "streamlets",
                    "campaigns",
                    "events",
                    "rate",
                    "producers",
                    "seed",
                    "batch-bytes",
                    "linger-ms",
                    "views-file",
                    "target");

    /**
     * Rate pacing and event times look at the clock every this many events: pacing releases them
     * together, so they leave within tens of microseconds of that reading, and a clock read per
     * event was a twentieth of the producer's CPU.
     */
    private static final int PACING_BATCH = 64;

    private YsbProducer() {}

    /** What {@link #produce} sent. */
    public record Result(
            long events,
            long views,
            long bytes,
            double seconds,
            long targetRate,
            SortedMap<Long, Long> viewsPerWindow) {
        public String toJson() {
            return String.format(
                    Locale.ROOT,
                    "{\"events\":%d,\"views\":%d,\"bytes\":%d,\"seconds\":%.3f,"
                            + "\"events_per_s\":%.0f,\"target_rate\":%d}",
                    events,
                    views,
                    bytes,
                    seconds,
                    events / seconds,
                    targetRate);
        }
    }

    public static void main(String[] args) throws Exception {
        Flags flags = new Flags(args, FLAGS);
        String broker = flags.required("broker");
        String stream = flags.required("stream");
        int streamlets = flags.intValue("streamlets", 4, 1);
        Path campaignsFile = Path.of(flags.required("campaigns"));
        long events = flags.longValue("events", 0, 1);
        if (events == 0) {
            throw new IllegalArgumentException("--events is required");
        }
        long rate = flags.longValue("rate", 0, 0);
        int producers = flags.intValue("producers", 1, 1);
        long seed = flags.longValue("seed", 42, Long.MIN_VALUE);
        YsbCampaigns campaigns = YsbCampaigns.generate(seed);
        campaigns.write(campaignsFile);
        int batchBytes = flags.intValue("batch-bytes", 64 * 1024, 1);
        Duration linger = Duration.ofMillis(flags.longValue("linger-ms", 5, 0));
        Result result;
        String target = flags.string("target", "nearstream");
        if (!target.equals("nearstream") && !target.equals("kafka")) {
            throw new IllegalArgumentException("--target is nearstream or kafka, got " + target);
        }
        if (target.equals("kafka")) {
            // --broker is Kafka's bootstrap servers and --stream the topic (created beforehand).
            result =
                    produce(
                            () -> EventSink.kafka(broker, stream, batchBytes, linger.toMillis()),
                            campaigns,
                            events,
                            rate,
                            producers,
                            seed);
        } else {
            try (NearstreamClient client = NettyNearstreamClient.connect(broker)) {
                StreamSetup.ensure(client, stream, streamlets);
                NearstreamProducerConfig config =
                        NearstreamProducerConfig.builder(client, stream)
                                .batchSizeBytes(batchBytes)
                                .linger(linger)
                                .build();
                result =
                        produce(
                                () -> EventSink.nearstream(config),
                                campaigns,
                                events,
                                rate,
                                producers,
                                seed);
            }
        }
        String viewsFile = flags.string("views-file", null);
        if (viewsFile != null) {
            YsbSummary.writeProducedViews(Path.of(viewsFile), result.viewsPerWindow());
        }
        System.out.println(result.toJson());
    }

    /** {@link #produce(Supplier, YsbCampaigns, long, long, int, long)} into Nearstream. */
    public static Result produceTo(
            NearstreamProducerConfig config,
            YsbCampaigns campaigns,
            long events,
            long rate,
            int threads,
            long seed)
            throws Exception {
        return produce(() -> EventSink.nearstream(config), campaigns, events, rate, threads, seed);
    }

    /**
     * Makes {@code events} events with {@code threads} threads at {@code rate} events/s in total
     * (0: unthrottled) and waits until all are stored. Each thread draws from its own seed and
     * sends through a sink of its own ({@code sinks} is called once per thread).
     */
    public static Result produce(
            Supplier<EventSink> sinks,
            YsbCampaigns campaigns,
            long events,
            long rate,
            int threads,
            long seed)
            throws Exception {
        long[] views = new long[threads];
        List<Map<Long, Long>> windowViews = new ArrayList<>();
        long[] bytes = new long[threads];
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> workers = new ArrayList<>();
        long start = System.nanoTime();
        for (int t = 0; t < threads; t++) {
            int index = t;
            long share = events / threads + (t < events % threads ? 1 : 0);
            double ratePerThread = rate == 0 ? 0 : (double) rate / threads;
            Map<Long, Long> myWindowViews = new HashMap<>();
            windowViews.add(myWindowViews);
            Thread worker =
                    new Thread(
                            () -> {
                                Consumer<Throwable> onFailure = e -> failure.compareAndSet(null, e);
                                try (EventSink producer = sinks.get()) {
                                    YsbEventGenerator generator =
                                            new YsbEventGenerator(
                                                    campaigns.ads(), seed + 1 + index);
                                    long[] counted =
                                            produceShare(
                                                    producer,
                                                    generator,
                                                    share,
                                                    start,
                                                    ratePerThread,
                                                    myWindowViews,
                                                    failure,
                                                    onFailure);
                                    producer.flush();
                                    views[index] = counted[0];
                                    bytes[index] = counted[1];
                                } catch (Throwable e) {
                                    failure.compareAndSet(null, e);
                                }
                            },
                            "ysb-producer-" + t);
            workers.add(worker);
            worker.start();
        }
        for (Thread worker : workers) {
            worker.join();
        }
        if (failure.get() != null) {
            throw new IllegalStateException("YSB producer failed", failure.get());
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        long totalViews = 0;
        long totalBytes = 0;
        for (int t = 0; t < threads; t++) {
            totalViews += views[t];
            totalBytes += bytes[t];
        }
        SortedMap<Long, Long> perWindow = new TreeMap<>();
        for (Map<Long, Long> m : windowViews) {
            m.forEach((end, n) -> perWindow.merge(end, n, Long::sum));
        }
        return new Result(
                events,
                totalViews,
                totalBytes,
                seconds,
                rate,
                Collections.unmodifiableSortedMap(perWindow));
    }

    /**
     * One thread's events: returns {views, bytes}. Counts are kept in locals and views per window
     * in a running count, merged when the window changes: the two threads' counters used to share
     * cache lines and a boxed map update per view.
     */
    private static long[] produceShare(
            EventSink producer,
            YsbEventGenerator generator,
            long share,
            long startNanos,
            double ratePerThread,
            Map<Long, Long> windowViews,
            AtomicReference<Throwable> failure,
            Consumer<Throwable> onFailure)
            throws Exception {
        long views = 0;
        long bytes = 0;
        long now = 0;
        long window = Long.MIN_VALUE;
        long viewsInWindow = 0;
        for (long i = 0; i < share && failure.get() == null; i++) {
            if (i % PACING_BATCH == 0) {
                if (ratePerThread > 0) {
                    pace(startNanos, i, ratePerThread);
                }
                now = System.currentTimeMillis();
            }
            byte[] event = generator.next(now);
            if (generator.lastIsView()) {
                views++;
                long end = YsbPipeline.windowEnd(now);
                if (end != window) {
                    if (viewsInWindow > 0) {
                        windowViews.merge(window, viewsInWindow, Long::sum);
                    }
                    window = end;
                    viewsInWindow = 0;
                }
                viewsInWindow++;
            }
            bytes += event.length;
            producer.send(event, onFailure);
        }
        if (viewsInWindow > 0) {
            windowViews.merge(window, viewsInWindow, Long::sum);
        }
        return new long[] {views, bytes};
    }

    /** Sleeps until event {@code sent} is due at {@code ratePerSecond} from {@code startNanos}. */
    private static void pace(long startNanos, long sent, double ratePerSecond) {
        long due = startNanos + (long) (sent / ratePerSecond * TimeUnit.SECONDS.toNanos(1));
        long wait;
        while ((wait = due - System.nanoTime()) > 0) {
            LockSupport.parkNanos(wait);
        }
    }
}
