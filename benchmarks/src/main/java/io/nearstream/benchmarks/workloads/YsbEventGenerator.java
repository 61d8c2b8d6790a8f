package io.nearstream.benchmarks.workloads;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Makes YSB ad events as JSON, as the benchmark's original generator does: {@code user_id}, {@code
 * page_id} random UUIDs, {@code ad_id} one of the campaigns' ads, {@code ad_type} one of five,
 * {@code event_type} {@code view}, {@code click} or {@code purchase} with equal odds, {@code
 * event_time} the given epoch milliseconds (a string, as in YSB), {@code ip_address} a fixed
 * address. About 240 bytes per event. Deterministic for a seed and a sequence of event times. Not
 * thread-safe: one per producer thread.
 */
public final class YsbEventGenerator {

    static final String[] AD_TYPES = {"banner", "modal", "sponsored-search", "mail", "mobile"};
    static final String[] EVENT_TYPES = {"view", "click", "purchase"};

    private final List<String> ads;
    private final SplittableRandom random;
    private final StringBuilder json = new StringBuilder(320);
    private String lastAdId;
    private String lastEventType;

    public YsbEventGenerator(List<String> ads, long seed) {
        if (ads.isEmpty()) {
            throw new IllegalArgumentException("no ads to make events for");
        }
        this.ads = ads;
        this.random = new SplittableRandom(seed);
    }

    /** The next event, stamped {@code eventTimeMs}, as UTF-8 JSON. */
    public byte[] next(long eventTimeMs) {
        lastAdId = ads.get(random.nextInt(ads.size()));
        lastEventType = EVENT_TYPES[random.nextInt(EVENT_TYPES.length)];
        json.setLength(0);
        json.append("{\"user_id\":\"");
        appendUuid(random.nextLong(), random.nextLong());
        json.append("\",\"page_id\":\"");
        appendUuid(random.nextLong(), random.nextLong());
        json.append("\",\"ad_id\":\"").append(lastAdId);
        json.append("\",\"ad_type\":\"").append(AD_TYPES[random.nextInt(AD_TYPES.length)]);
        json.append("\",\"event_type\":\"").append(lastEventType);
        json.append("\",\"event_time\":\"").append(eventTimeMs);
        json.append("\",\"ip_address\":\"1.2.3.4\"}");
        return json.toString().getBytes(StandardCharsets.US_ASCII);
    }

    /** The ad of the last event. */
    public String lastAdId() {
        return lastAdId;
    }

    /** The type of the last event. */
    public String lastEventType() {
        return lastEventType;
    }

    private static final char[] HEX = "0123456789abcdef".toCharArray();

    /** UUID text form (8-4-4-4-12 hex digits) without allocating a UUID. */
    private void appendUuid(long hi, long lo) {
        appendHex(hi >>> 32, 8);
        json.append('-');
        appendHex(hi >>> 16, 4);
        json.append('-');
        appendHex(hi, 4);
        json.append('-');
        appendHex(lo >>> 48, 4);
        json.append('-');
        appendHex(lo, 12);
    }

    private void appendHex(long value, int digits) {
        for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) {
            json.append(HEX[(int) (value >>> shift) & 0xF]);
        }
    }
}
