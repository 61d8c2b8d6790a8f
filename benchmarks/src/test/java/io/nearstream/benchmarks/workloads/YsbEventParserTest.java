package io.nearstream.benchmarks.workloads;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class YsbEventParserTest {

    private final YsbEventParser parser = new YsbEventParser();

    private void parse(String json) {
        parser.parse(json.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void readsTheGeneratorsEvents() {
        YsbCampaigns campaigns = YsbCampaigns.generate(1);
        YsbEventGenerator generator = new YsbEventGenerator(campaigns.ads(), 2);
        for (int i = 0; i < 1_000; i++) {
            byte[] event = generator.next(1_700_000_000_000L + i);
            parser.parse(event);
            assertThat(parser.adId()).isEqualTo(generator.lastAdId());
            assertThat(parser.eventType()).isEqualTo(generator.lastEventType());
            assertThat(parser.isView()).isEqualTo(generator.lastEventType().equals("view"));
            assertThat(parser.eventTime()).isEqualTo(1_700_000_000_000L + i);
        }
    }

    @Test
    void acceptsAnyFieldOrderWhitespaceNumbersAndEscapes() {
        parse(
                " { \"event_time\" : 42 ,\n \"extra\": [1] ".replace("[1]", "null")
                        + ", \"ok\": true, \"n\": -1.5e3, \"event_type\":\"v\\u0069ew\","
                        + "\"ad_id\":\"a\\\"b\" } ");
        assertThat(parser.eventTime()).isEqualTo(42);
        assertThat(parser.adId()).isEqualTo("a\"b");
        assertThat(parser.eventType()).isEqualTo("view");
        // An escaped "view" is still a view by value; isView() compares raw bytes, so say no
        // rather than mis-count: YSB types carry no escapes.
        assertThat(parser.isView()).isFalse();

        parse("{\"ad_id\":\"x\",\"event_type\":\"click\",\"event_time\":\"7\"}");
        assertThat(parser.isView()).isFalse();
        assertThat(parser.eventType()).isEqualTo("click");
        assertThat(parser.eventTime()).isEqualTo(7);
    }

    @Test
    void findsTheEndOfAStringWhereverItFallsInTheEightByteScan() {
        // Strings are scanned eight bytes at a time: put a quote, an escape and a control
        // character at every offset in and across those words, and after non-ASCII bytes.
        for (int len = 0; len < 24; len++) {
            String body = "\u00e9abcdefghijklmnopqrstuvwxyz".substring(0, len + 1);
            for (int shift = 0; shift < 8; shift++) {
                String pad = " ".repeat(shift);
                parse(
                        pad
                                + "{\"ad_id\":\""
                                + body
                                + "\",\"event_type\":\"view\",\"event_time\":1}");
                assertThat(parser.adId()).isEqualTo(body);
                assertThat(parser.isView()).isTrue();
                parse(
                        pad
                                + "{\"ad_id\":\""
                                + body
                                + "\\\"q\",\"event_type\":\"x\",\"event_time\":1}");
                assertThat(parser.adId()).isEqualTo(body + "\"q");
                String control = pad + "{\"ad_id\":\"" + body + "\u0001\",\"event_type\":\"x\"}";
                assertThatThrownBy(() -> parse(control))
                        .hasMessageContaining("control character in a string");
                String unterminated = pad + "{\"ad_id\":\"" + body;
                assertThatThrownBy(() -> parse(unterminated))
                        .hasMessageContaining("unexpected end");
            }
        }
    }

    @Test
    void looksTheAdUpInTheCampaignTableWithoutAString() {
        YsbCampaigns campaigns = YsbCampaigns.generate(1);
        AdCampaignTable table = new AdCampaignTable(campaigns.adToCampaign());
        YsbEventGenerator generator = new YsbEventGenerator(campaigns.ads(), 2);
        for (int i = 0; i < 1_000; i++) {
            parser.parse(generator.next(1_700_000_000_000L + i));
            int index = parser.campaignIndexOfAd(table);
            assertThat(table.campaign(index))
                    .isEqualTo(campaigns.adToCampaign().get(generator.lastAdId()));
        }
        AdCampaignTable escaped = new AdCampaignTable(java.util.Map.of("a\"b", "c1", "ab", "c2"));
        parse("{\"ad_id\":\"a\\\"b\",\"event_type\":\"view\",\"event_time\":1}");
        assertThat(escaped.campaign(parser.campaignIndexOfAd(escaped))).isEqualTo("c1");
        parse("{\"ad_id\":\"abc\",\"event_type\":\"view\",\"event_time\":1}");
        assertThat(parser.campaignIndexOfAd(escaped)).isEqualTo(-1);
    }

    @Test
    void explainsMalformedEvents() {
        assertThatThrownBy(() -> parse("{\"ad_id\":\"x\",\"event_type\":\"view\"}"))
                .hasMessageContaining("lacks event_time");
        assertThatThrownBy(
                        () ->
                                parse(
                                        "{\"ad_id\":\"x\",\"event_type\":\"view\",\"event_time\":\"12a\"}"))
                .hasMessageContaining("event_time must be digits");
        assertThatThrownBy(() -> parse("{\"ad_id\":1,\"event_type\":\"view\",\"event_time\":1}"))
                .hasMessageContaining("ad_id must be a string");
        assertThatThrownBy(() -> parse("{\"ad_id\":\"x\" \"event_type\":\"view\"}"))
                .hasMessageContaining("expected ',' or '}'");
        assertThatThrownBy(() -> parse("{\"ad_id\":\"x")).hasMessageContaining("unexpected end");
        assertThatThrownBy(() -> parse("{\"a\":{}}")).hasMessageContaining("nested objects");
        assertThatThrownBy(() -> parse("{} x")).hasMessageContaining("trailing bytes");
    }
}
