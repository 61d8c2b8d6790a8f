package io.nearstream.benchmarks.sql;

import io.nearstream.benchmarks.workloads.AdCampaignTable;
import java.util.Map;
import org.apache.flink.table.functions.TableFunction;

/**
 * YSB's ad -> campaign table as a SQL table function, joined to the events with {@code JOIN LATERAL
 * TABLE(CAMPAIGN_OF(ad_id)) AS c(campaign_id) ON TRUE}: one row for an ad of the table, none for
 * any other (an inner join).
 *
 * <p>Why not a regular join with the table as a VALUES view: in streaming mode Flink materializes
 * the time attributes of a regular join's inputs, so the window TVF after it fails ("The window
 * function requires the timecol is a time attribute type"), and joining after a per-ad window turns
 * the per-campaign count into an updating aggregate, which an append-only sink cannot take. A table
 * function keeps the rowtime, holds no state, and looks the ad up in the same {@link
 * AdCampaignTable} the DataStream job's join uses.
 */
public final class CampaignOf extends TableFunction<String> {

    private static final long serialVersionUID = 1L;

    /** The name {@link YsbSql} registers it under. */
    public static final String NAME = "CAMPAIGN_OF";

    private final AdCampaignTable table;

    public CampaignOf(Map<String, String> adToCampaign) {
        this.table = new AdCampaignTable(adToCampaign);
    }

    public void eval(String adId) {
        if (adId == null) {
            return;
        }
        int campaign = table.campaignIndex(adId);
        if (campaign >= 0) {
            collect(table.campaign(campaign));
        }
    }
}
