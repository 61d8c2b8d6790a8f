package io.nearstream.benchmarks.workloads;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import org.apache.flink.util.InstantiationUtil;
import org.junit.jupiter.api.Test;

class AdCampaignTableTest {

    @Test
    void mapsEveryAdOfTheTableToItsCampaignAndNothingElse() throws Exception {
        YsbCampaigns campaigns = YsbCampaigns.generate(3);
        // Shipped to the job as part of its functions: check the deserialized copy.
        AdCampaignTable table =
                InstantiationUtil.clone(
                        new AdCampaignTable(campaigns.adToCampaign()), getClass().getClassLoader());
        assertThat(table.size()).isEqualTo(campaigns.adToCampaign().size());
        campaigns
                .adToCampaign()
                .forEach(
                        (ad, campaign) -> {
                            // In place, inside a larger array, as the parser asks.
                            byte[] event = ("xx\"" + ad + "\"yy").getBytes(StandardCharsets.UTF_8);
                            int index = table.campaignIndex(event, 3, event.length - 3);
                            assertThat(table.campaign(index)).isEqualTo(campaign);
                            assertThat(table.campaignIndex(ad)).isEqualTo(index);
                            // A prefix or an extension of a known ad is not that ad.
                            assertThat(table.campaignIndex(ad.substring(1))).isEqualTo(-1);
                            assertThat(table.campaignIndex(ad + "0")).isEqualTo(-1);
                        });
    }

    @Test
    void givesEachCampaignOneIndexAndRefusesAnEmptyTable() {
        Map<String, String> adToCampaign = new HashMap<>();
        for (int ad = 0; ad < 37; ad++) {
            adToCampaign.put("ad-" + ad, "campaign-" + ad % 5);
        }
        adToCampaign.put("", "campaign-empty"); // an empty id is still an id
        AdCampaignTable table = new AdCampaignTable(adToCampaign);
        for (int ad = 0; ad < 37; ad++) {
            assertThat(table.campaignIndex("ad-" + ad))
                    .isEqualTo(table.campaignIndex("ad-" + (ad % 5)));
        }
        assertThat(table.campaign(table.campaignIndex(""))).isEqualTo("campaign-empty");
        assertThat(table.campaign(table.campaignIndex("ad-7"))).isEqualTo("campaign-2");
        assertThatThrownBy(() -> new AdCampaignTable(Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("empty");
    }
}
