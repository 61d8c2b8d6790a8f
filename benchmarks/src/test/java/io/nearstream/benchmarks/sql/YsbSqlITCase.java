package io.nearstream.benchmarks.sql;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.benchmarks.workloads.CampaignWindowCount;
import io.nearstream.benchmarks.workloads.ResultRecords;
import io.nearstream.benchmarks.workloads.YsbCampaigns;
import io.nearstream.benchmarks.workloads.YsbPipeline;
import io.nearstream.benchmarks.workloads.YsbReference;
import io.nearstream.client.NearstreamProducer;
import io.nearstream.client.NearstreamProducerConfig;
import io.nearstream.flink.source.NearstreamSource;
import io.nearstream.flink.source.NearstreamStoppingPositions;
import io.nearstream.flink.source.ReadMode;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * YSB in Flink SQL ({@link YsbSql}) against the real broker, in push mode: its window counts equal
 * those of the DataStream job ({@link YsbPipeline}) reading the same events in push mode, and both
 * equal the independent count of {@link YsbReference}.
 */
class YsbSqlITCase {

    /**
     * Source parallelism = streamlets: each source task reads one streamlet, whose events are in
     * event-time order, so no event falls behind the 1 s watermark bound of either job.
     */
    private static final int PARALLELISM = 2;

    private static final long START_MS = 1_700_000_000_000L; // a multiple of 10 s
    private static final int EVENTS = 20_000;
    private static final long SPACING_MS = 5; // 20 000 events over 100 s: 10 windows

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    @RegisterExtension
    static final MiniClusterExtension FLINK =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(PARALLELISM)
                            .build());

    @TempDir Path tmp;

    @Test
    void sqlWindowCountsEqualTheDataStreamJobsAndTheReference() throws Exception {
        Path table = tmp.resolve("campaigns.csv");
        YsbReference reference = YsbReference.withTable(table, 7, EVENTS, START_MS, SPACING_MS);
        Map<String, String> adToCampaign = YsbCampaigns.read(table).adToCampaign();
        BROKER.createStream("ysb-events", PARALLELISM);
        try (NearstreamProducer producer =
                new NearstreamProducer(
                        NearstreamProducerConfig.builder(BROKER.client(), "ysb-events").build())) {
            for (int i = 0; i < reference.events.size(); i++) {
                producer.sendTo(i % PARALLELISM, reference.events.get(i), (pos, error) -> {});
            }
            producer.flush();
        }

        List<CampaignWindowCount> dataStream = dataStreamJob(adToCampaign);

        BROKER.createStream("ysb-sql-windows", PARALLELISM);
        TableEnvironment env = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
        env.getConfig().set("parallelism.default", Integer.toString(PARALLELISM));
        env.getConfig().set("restart-strategy.type", "none");
        YsbSql ysb =
                new YsbSql(
                        BROKER.address(),
                        "ysb-events",
                        "ysb-sql-windows",
                        ReadMode.PUSH,
                        true,
                        DeliveryGuarantee.AT_LEAST_ONCE);
        env.executeSql(ysb.register(env, adToCampaign)).await(2, TimeUnit.MINUTES);
        List<String> lines =
                ResultRecords.readAll(BROKER.client(), "ysb-sql-windows", Duration.ofSeconds(1));
        List<CampaignWindowCount> sql = new ArrayList<>();
        for (String line : lines) {
            CampaignWindowCount w = CampaignWindowCount.parseCsv(line);
            assertThat(line)
                    .as("the DataStream job's layout, latency = emitted_at - window_end")
                    .isEqualTo(w.toCsv());
            sql.add(w);
        }

        assertThat(reference.expected).hasSizeGreaterThan(900); // 100 campaigns, 10 windows
        reference.assertExactlyOnceEach(dataStream);
        reference.assertExactlyOnceEach(sql);
        assertThat(countsOf(sql)).isEqualTo(countsOf(dataStream));
    }

    /** The DataStream YSB job over the same stream, push mode, its results collected. */
    private static List<CampaignWindowCount> dataStreamJob(Map<String, String> adToCampaign)
            throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(PARALLELISM);
        NearstreamSource<byte[]> source =
                NearstreamSource.<byte[]>builder()
                        .setBrokers(BROKER.address())
                        .setStream("ysb-events")
                        .setReadMode(ReadMode.PUSH)
                        .setDeserializer(NearstreamRecordDeserializationSchema.bytes())
                        .setBounded(NearstreamStoppingPositions.latest())
                        .build();
        List<CampaignWindowCount> windows = new ArrayList<>();
        try (CloseableIterator<CampaignWindowCount> it =
                YsbPipeline.campaignWindowCounts(
                                env.fromSource(
                                        source, WatermarkStrategy.noWatermarks(), "ysb-events"),
                                adToCampaign,
                                YsbPipeline.DEFAULT_OUT_OF_ORDERNESS)
                        .executeAndCollect("ysb datastream push")) {
            it.forEachRemaining(windows::add);
        }
        return windows;
    }

    /** {@code campaign@windowEnd} -> "count/max event time". */
    private static Map<String, String> countsOf(List<CampaignWindowCount> windows) {
        Map<String, String> counts = new TreeMap<>();
        for (CampaignWindowCount w : windows) {
            counts.put(YsbReference.key(w.campaignId, w.windowEnd), w.count + "/" + w.maxEventTime);
        }
        return counts;
    }
}
