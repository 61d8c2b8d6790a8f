package io.nearstream.benchmarks.workloads;

import java.time.Duration;
import java.util.Map;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/**
 * The Yahoo Streaming Benchmark query over JSON ad events, whatever source delivers them:
 *
 * <pre>
 * parse JSON -> filter event_type == "view" -> project (ad_id, event_time)
 *   -> join ad_id -> campaign (static table) -> event-time watermarks
 *   -> keyBy campaign -> 10 s tumbling event-time window -> count
 *   -> (campaign, window end, count, max event time, emission time)
 * </pre>
 *
 * Parse, filter, project and join are one operator: the parser reads only the three fields needed
 * and the join looks the ad id's bytes up in the table where they lie ({@link AdCampaignTable}), so
 * a view costs no string; the campaign travels to the window as the table's index and becomes its
 * id again when the window fires. An ad missing from the table fails the job, since it means the
 * job was given another producer's table. Event time is the event's {@code event_time}; watermarks
 * trail the largest event time seen by {@code maxOutOfOrderness} (events of several streamlets
 * interleave on one source task), and events later than that are dropped by the window, which the
 * count check against the producer's views reveals. A window result's latency is the wall clock at
 * emission minus the window end ({@link CampaignWindowCount#latencyMs()}), so it includes the
 * out-of-orderness bound and Flink's watermark interval (200 ms by default).
 *
 * <pre>{@code
 * YsbCampaigns campaigns = YsbCampaigns.read(Path.of("campaigns.csv"));
 * YsbPipeline.campaignWindowCounts(events, campaigns.adToCampaign(), YsbPipeline.DEFAULT_OUT_OF_ORDERNESS)
 *         .sinkTo(new YsbWindowSink(outputDir));
 * }</pre>
 */
public final class YsbPipeline {

    public static final Duration WINDOW = Duration.ofSeconds(10);
    public static final Duration DEFAULT_OUT_OF_ORDERNESS = Duration.ofSeconds(1);

    private YsbPipeline() {}

    /** The end of the {@link #WINDOW} an event time falls in (epoch-aligned, as Flink's). */
    public static long windowEnd(long eventTimeMs) {
        long size = WINDOW.toMillis();
        return eventTimeMs - Math.floorMod(eventTimeMs, size) + size;
    }

    /** The YSB query; see the class comment. */
    public static DataStream<CampaignWindowCount> campaignWindowCounts(
            DataStream<byte[]> events,
            Map<String, String> adToCampaign,
            Duration maxOutOfOrderness) {
        AdCampaignTable table = new AdCampaignTable(adToCampaign);
        return events.flatMap(new ParseFilterProjectJoin(table))
                .name("parse, filter view, project, join ad -> campaign")
                .assignTimestampsAndWatermarks(
                        WatermarkStrategy.<Tuple2<Integer, Long>>forBoundedOutOfOrderness(
                                        maxOutOfOrderness)
                                .withTimestampAssigner((e, recordTs) -> e.f1)
                                .withIdleness(Duration.ofSeconds(5)))
                .name("event-time watermarks")
                .keyBy(e -> e.f0)
                .window(TumblingEventTimeWindows.of(WINDOW))
                .aggregate(new CountViews(), new EmitWindow(table))
                .name("10 s window count per campaign");
    }

    /** JSON event -> (campaign index, event_time) for views; other event types are dropped. */
    static final class ParseFilterProjectJoin
            implements FlatMapFunction<byte[], Tuple2<Integer, Long>> {
        private static final long serialVersionUID = 1L;
        private final AdCampaignTable table;
        private transient YsbEventParser parser;

        ParseFilterProjectJoin(AdCampaignTable table) {
            this.table = table;
        }

        @Override
        public void flatMap(byte[] event, Collector<Tuple2<Integer, Long>> out) {
            if (parser == null) {
                parser = new YsbEventParser();
            }
            parser.parse(event);
            if (!parser.isView()) {
                return;
            }
            int campaign = parser.campaignIndexOfAd(table);
            if (campaign < 0) {
                throw new IllegalArgumentException(
                        "ad "
                                + parser.adId()
                                + " is not in the ad -> campaign table ("
                                + table.size()
                                + " ads): was the job given the table of the producer that made"
                                + " these events?");
            }
            out.collect(Tuple2.of(campaign, parser.eventTime()));
        }
    }

    /** Counts a window's events and keeps the largest event time: (count, max event time). */
    static final class CountViews
            implements AggregateFunction<Tuple2<Integer, Long>, long[], long[]> {
        private static final long serialVersionUID = 1L;

        @Override
        public long[] createAccumulator() {
            return new long[] {0, Long.MIN_VALUE};
        }

        @Override
        public long[] add(Tuple2<Integer, Long> event, long[] acc) {
            acc[0]++;
            acc[1] = Math.max(acc[1], event.f1);
            return acc;
        }

        @Override
        public long[] getResult(long[] acc) {
            return acc;
        }

        @Override
        public long[] merge(long[] a, long[] b) {
            return new long[] {a[0] + b[0], Math.max(a[1], b[1])};
        }
    }

    /** Names the window's campaign and stamps the result with its end and the wall clock. */
    static final class EmitWindow
            extends ProcessWindowFunction<long[], CampaignWindowCount, Integer, TimeWindow> {
        private static final long serialVersionUID = 1L;
        private final AdCampaignTable table;

        EmitWindow(AdCampaignTable table) {
            this.table = table;
        }

        @Override
        public void process(
                Integer campaign,
                Context context,
                Iterable<long[]> results,
                Collector<CampaignWindowCount> out) {
            long[] r = results.iterator().next();
            out.collect(
                    new CampaignWindowCount(
                            table.campaign(campaign),
                            context.window().getEnd(),
                            r[0],
                            r[1],
                            System.currentTimeMillis()));
        }
    }
}
