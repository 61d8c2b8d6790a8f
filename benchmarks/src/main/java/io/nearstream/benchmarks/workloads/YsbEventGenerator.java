package io.nearstream.benchmarks.workloads;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Makes YSB ad events as JSON, as the benchmark's original generator does in its real-time mode:
 * {@code user_id} and {@code page_id} each one of {@value #USERS_AND_PAGES} random UUIDs drawn when
 * the generator is made, {@code ad_id} one of the campaigns' ads, {@code ad_type} one of five,
 * {@code event_type} {@code view}, {@code click} or {@code purchase} with equal odds, {@code
 * event_time} the given epoch milliseconds (a string, as in YSB), {@code ip_address} a fixed
 * address; every pick uniform. About 240 bytes per event. Deterministic for a seed and a sequence
 * of event times. Not thread-safe: one per producer thread.
 *
 * <p>Writes the JSON as bytes into one reused buffer (the ads, types and field names encoded once),
 * so an event costs one array of its exact size: the producer, not the job, limited the rates the
 * YSB comparison could offer when each event went through a {@code StringBuilder}, a {@code String}
 * and its encoding.
 */
public final class YsbEventGenerator {

    static final String[] AD_TYPES = {"banner", "modal", "sponsored-search", "mail", "mobile"};
    static final String[] EVENT_TYPES = {"view", "click", "purchase"};
    private static final int VIEW = 0; // index of "view" in EVENT_TYPES

    /** How many user ids and how many page ids events pick from (YSB's {@code make-ids 100}). */
    static final int USERS_AND_PAGES = 100;

    private static final byte[] USER_ID = ascii("{\"user_id\":\"");
    private static final byte[] PAGE_ID = ascii("\",\"page_id\":\"");
    private static final byte[] AD_ID = ascii("\",\"ad_id\":\"");
    private static final byte[] AD_TYPE = ascii("\",\"ad_type\":\"");
    private static final byte[] EVENT_TYPE = ascii("\",\"event_type\":\"");
    private static final byte[] EVENT_TIME = ascii("\",\"event_time\":\"");
    private static final byte[] IP_ADDRESS = ascii("\",\"ip_address\":\"1.2.3.4\"}");
    private static final byte[][] AD_TYPE_BYTES = asciiAll(AD_TYPES);
    private static final byte[][] EVENT_TYPE_BYTES = asciiAll(EVENT_TYPES);
    private static final byte[] HEX = ascii("0123456789abcdef");
    private static final int UUID_CHARS = 36;
    private static final int MAX_LONG_DIGITS = 19;

    private final List<String> ads;
    private final byte[][] adBytes;
    private final SplittableRandom random;
    private final byte[][] userIds;
    private final byte[][] pageIds;
    private final byte[] buffer;
    // The last event time's digits: producers stamp runs of events with one clock reading.
    private final byte[] timeDigits = new byte[MAX_LONG_DIGITS];
    private int timeDigitCount;
    private long digitsOfTime = -1;
    private int length;
    private int lastAd;
    private int lastEventType;

    public YsbEventGenerator(List<String> ads, long seed) {
        if (ads.isEmpty()) {
            throw new IllegalArgumentException("no ads to make events for");
        }
        this.ads = List.copyOf(ads);
        this.adBytes = new byte[ads.size()][];
        int longestAd = 0;
        for (int i = 0; i < adBytes.length; i++) {
            String ad = ads.get(i);
            if (!StandardCharsets.US_ASCII.newEncoder().canEncode(ad)
                    || ad.indexOf('"') >= 0
                    || ad.indexOf('\\') >= 0) {
                throw new IllegalArgumentException("ad id is not plain ASCII JSON text: " + ad);
            }
            adBytes[i] = ascii(ad);
            longestAd = Math.max(longestAd, adBytes[i].length);
        }
        this.random = new SplittableRandom(seed);
        this.userIds = uuids(random, USERS_AND_PAGES);
        this.pageIds = uuids(random, USERS_AND_PAGES);
        this.buffer =
                new byte
                        [USER_ID.length
                                + UUID_CHARS
                                + PAGE_ID.length
                                + UUID_CHARS
                                + AD_ID.length
                                + longestAd
                                + AD_TYPE.length
                                + longest(AD_TYPE_BYTES)
                                + EVENT_TYPE.length
                                + longest(EVENT_TYPE_BYTES)
                                + EVENT_TIME.length
                                + MAX_LONG_DIGITS
                                + IP_ADDRESS.length];
    }

    /**
     * The next event, stamped {@code eventTimeMs}, as UTF-8 JSON.
     *
     * @throws IllegalArgumentException when {@code eventTimeMs} is negative
     */
    public byte[] next(long eventTimeMs) {
        if (eventTimeMs < 0) {
            throw new IllegalArgumentException("event time before the epoch: " + eventTimeMs);
        }
        // The draws in the order the fields appear, as the event's text always had them.
        lastAd = random.nextInt(adBytes.length);
        lastEventType = random.nextInt(EVENT_TYPES.length);
        length = 0;
        put(USER_ID);
        put(userIds[random.nextInt(USERS_AND_PAGES)]);
        put(PAGE_ID);
        put(pageIds[random.nextInt(USERS_AND_PAGES)]);
        put(AD_ID);
        put(adBytes[lastAd]);
        put(AD_TYPE);
        put(AD_TYPE_BYTES[random.nextInt(AD_TYPES.length)]);
        put(EVENT_TYPE);
        put(EVENT_TYPE_BYTES[lastEventType]);
        put(EVENT_TIME);
        putDigits(eventTimeMs);
        put(IP_ADDRESS);
        return Arrays.copyOf(buffer, length);
    }

    /** The ad of the last event. */
    public String lastAdId() {
        return ads.get(lastAd);
    }

    /** The type of the last event. */
    public String lastEventType() {
        return EVENT_TYPES[lastEventType];
    }

    /** Whether the last event is a {@code view}, the only type the YSB query counts. */
    public boolean lastIsView() {
        return lastEventType == VIEW;
    }

    private void put(byte[] bytes) {
        System.arraycopy(bytes, 0, buffer, length, bytes.length);
        length += bytes.length;
    }

    /** {@code n} random UUIDs in text form (8-4-4-4-12 lowercase hex digits), as ASCII. */
    private static byte[][] uuids(SplittableRandom random, int n) {
        byte[][] out = new byte[n][];
        for (int i = 0; i < n; i++) {
            long hi = random.nextLong();
            long lo = random.nextLong();
            byte[] text = new byte[UUID_CHARS];
            int at = 0;
            at = putHex(text, at, hi >>> 32, 8);
            text[at++] = '-';
            at = putHex(text, at, hi >>> 16, 4);
            text[at++] = '-';
            at = putHex(text, at, hi, 4);
            text[at++] = '-';
            at = putHex(text, at, lo >>> 48, 4);
            text[at++] = '-';
            putHex(text, at, lo, 12);
            out[i] = text;
        }
        return out;
    }

    private static int putHex(byte[] into, int at, long value, int digits) {
        for (int i = digits - 1; i >= 0; i--) {
            into[at + i] = HEX[(int) value & 0xF];
            value >>>= 4;
        }
        return at + digits;
    }

    private void putDigits(long value) {
        if (value != digitsOfTime) {
            int digits = 1;
            for (long v = value / 10; v != 0; v /= 10) {
                digits++;
            }
            long v = value;
            for (int i = digits - 1; i >= 0; i--) {
                timeDigits[i] = (byte) ('0' + v % 10);
                v /= 10;
            }
            timeDigitCount = digits;
            digitsOfTime = value;
        }
        System.arraycopy(timeDigits, 0, buffer, length, timeDigitCount);
        length += timeDigitCount;
    }

    private static int longest(byte[][] values) {
        int max = 0;
        for (byte[] v : values) {
            max = Math.max(max, v.length);
        }
        return max;
    }

    private static byte[][] asciiAll(String[] values) {
        byte[][] out = new byte[values.length][];
        for (int i = 0; i < values.length; i++) {
            out[i] = ascii(values[i]);
        }
        return out;
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
