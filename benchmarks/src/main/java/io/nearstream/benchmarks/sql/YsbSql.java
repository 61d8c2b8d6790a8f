package io.nearstream.benchmarks.sql;

import io.nearstream.benchmarks.workloads.CampaignWindowCount;
import io.nearstream.benchmarks.workloads.ResultRecords;
import io.nearstream.benchmarks.workloads.YsbPipeline;
import io.nearstream.flink.source.ReadMode;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.table.api.TableEnvironment;

/**
 * The Yahoo Streaming Benchmark query in Flink SQL, over the JSON events {@code YsbProducer} writes
 * to a Nearstream stream, its results written to another one in the text layout of the DataStream
 * job ({@link YsbPipeline}), so the same readers parse both ({@link CampaignWindowCount#parseCsv},
 * {@link ResultRecords}):
 *
 * <pre>
 * ysb_events (nearstream, json)   rowtime = event_time (a string of epoch ms), watermark - 1 s
 *   -> WHERE event_type = 'view'
 *   -> JOIN LATERAL TABLE(CAMPAIGN_OF(ad_id))      ad -> campaign ({@link CampaignOf})
 *   -> TUMBLE(rowtime, 10 s), GROUP BY campaign:   COUNT(*), MAX(event_time)
 *   -> INSERT INTO ysb_windows (nearstream, raw)   "campaign_id,window_end,count,max_event_time,
 *                                                   emitted_at,latency_ms", key campaign_id,
 *                                                   timestamp the window's last millisecond
 * </pre>
 *
 * As in the DataStream job: the watermark trails the largest event time by {@link
 * YsbPipeline#DEFAULT_OUT_OF_ORDERNESS} (here generated in the source, per streamlet), a source
 * task idle for 5 s stops holding it back, and events later than that are dropped by the window.
 * Unlike it, an ad missing from the table drops its views (an inner join) instead of failing the
 * job. Run the statements in streaming mode:
 *
 * <pre>{@code
 * TableEnvironment env = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
 * YsbSql ysb = new YsbSql(broker, "ysb", "ysb-windows", ReadMode.PUSH, false, DeliveryGuarantee.AT_LEAST_ONCE);
 * env.executeSql(ysb.register(env, YsbCampaigns.read(campaignsFile).adToCampaign()));
 * }</pre>
 *
 * @param broker the broker of both streams, host:port
 * @param eventStream the stream of JSON events
 * @param resultStream the stream the window results go to (it must exist)
 * @param readMode how the source reads the events
 * @param bounded whether the source stops at the tail the event stream has when the job starts
 *     ({@code scan.bounded.mode = latest}: every window fires when the input ends) or reads on
 * @param sinkGuarantee the result sink's {@code sink.delivery-guarantee} (exactly-once needs
 *     checkpoints, and takes the transactional id prefix {@code ysb-sql-<resultStream>})
 */
public record YsbSql(
        String broker,
        String eventStream,
        String resultStream,
        ReadMode readMode,
        boolean bounded,
        DeliveryGuarantee sinkGuarantee) {

    public static final String EVENTS = "ysb_events";
    public static final String VIEWS = "ysb_views";
    public static final String WINDOWS = "ysb_windows";

    /** The source table: every field of the event, the rowtime from {@code event_time}. */
    public String eventsTable() {
        TableDdl ddl =
                TableDdl.nearstream(
                                EVENTS,
                                "user_id STRING, page_id STRING, ad_id STRING, ad_type STRING,"
                                        + " event_type STRING, event_time STRING, ip_address STRING,\n"
                                        + "  rowtime AS TO_TIMESTAMP_LTZ(CAST(event_time AS BIGINT), 3),\n"
                                        + "  WATERMARK FOR rowtime AS rowtime - INTERVAL '"
                                        + YsbPipeline.DEFAULT_OUT_OF_ORDERNESS.toSeconds()
                                        + "' SECOND",
                                broker,
                                eventStream)
                        .with("format", "json")
                        .with("scan.read-mode", readMode.name().toLowerCase(Locale.ROOT))
                        // The DataStream job's WatermarkStrategy.withIdleness(5 s).
                        .with("scan.watermark.idle-timeout", "5 s");
        if (bounded) {
            ddl.with("scan.bounded.mode", "latest");
        }
        return ddl.toString();
    }

    /** The views, each with its ad's campaign, event time in ms and rowtime. */
    public String viewsView() {
        return "CREATE TEMPORARY VIEW "
                + VIEWS
                + " AS\nSELECT c.campaign_id, CAST(e.event_time AS BIGINT) AS event_ms, e.rowtime\n"
                + "FROM "
                + EVENTS
                + " AS e\n"
                + "JOIN LATERAL TABLE("
                + CampaignOf.NAME
                + "(e.ad_id)) AS c(campaign_id) ON TRUE\n"
                + "WHERE e.event_type = 'view'";
    }

    /** The sink table: the result line as the record's value, the campaign as its key. */
    public String windowsTable() {
        TableDdl ddl =
                TableDdl.nearstream(
                                WINDOWS,
                                "campaign_id STRING, line STRING,"
                                        + " window_time TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'",
                                broker,
                                resultStream)
                        .with("key.format", "raw")
                        .with("key.fields", "campaign_id")
                        .with("value.format", "raw")
                        .with("value.fields-include", "EXCEPT_KEY")
                        .with(
                                "sink.delivery-guarantee",
                                sinkGuarantee.name().toLowerCase(Locale.ROOT).replace('_', '-'));
        if (sinkGuarantee == DeliveryGuarantee.EXACTLY_ONCE) {
            ddl.with("sink.transactional-id-prefix", "ysb-sql-" + resultStream);
        }
        return ddl.toString();
    }

    /**
     * The query: 10 s tumbling windows of views per campaign, each result one line of {@link
     * CampaignWindowCount#toCsv()}'s columns. {@code emitted_at} is the wall clock when the result
     * leaves the window ({@code CURRENT_TIMESTAMP}, evaluated per row in streaming mode), read once
     * in the inner query so the latency column is exactly {@code emitted_at - window_end}.
     */
    public String insert() {
        return "INSERT INTO "
                + WINDOWS
                + "\nSELECT campaign_id,\n"
                + "  CONCAT_WS(',', campaign_id, CAST(window_end_ms AS STRING),"
                + " CAST(view_count AS STRING), CAST(max_event_ms AS STRING),"
                + " CAST(emitted_at AS STRING), CAST(emitted_at - window_end_ms AS STRING)),\n"
                + "  window_time\n"
                + "FROM (\n"
                + "  SELECT campaign_id, window_time, "
                + EpochMillis.NAME
                + "(window_time) + 1 AS window_end_ms,\n"
                + "    COUNT(*) AS view_count, MAX(event_ms) AS max_event_ms,\n"
                + "    "
                + EpochMillis.NAME
                + "(CURRENT_TIMESTAMP) AS emitted_at\n"
                + "  FROM TABLE(TUMBLE(TABLE "
                + VIEWS
                + ", DESCRIPTOR(rowtime), INTERVAL '"
                + YsbPipeline.WINDOW.toSeconds()
                + "' SECOND))\n"
                + "  GROUP BY campaign_id, window_start, window_end, window_time)";
    }

    /** The statements before the INSERT, in order. */
    public List<String> ddl() {
        return List.of(eventsTable(), viewsView(), windowsTable());
    }

    /**
     * Registers the functions ({@link CampaignOf} over {@code adToCampaign}, {@link EpochMillis})
     * and the tables and view in {@code env}, and returns the INSERT to run.
     */
    public String register(TableEnvironment env, Map<String, String> adToCampaign) {
        env.createTemporarySystemFunction(CampaignOf.NAME, new CampaignOf(adToCampaign));
        env.createTemporarySystemFunction(EpochMillis.NAME, EpochMillis.class);
        for (String statement : ddl()) {
            env.executeSql(statement);
        }
        return insert();
    }
}
