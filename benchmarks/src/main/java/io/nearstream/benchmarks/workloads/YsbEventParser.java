package io.nearstream.benchmarks.workloads;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * Reads the three fields the YSB query needs — {@code ad_id}, {@code event_type}, {@code
 * event_time} — out of one event's JSON bytes, checking the whole object's syntax on the way but
 * building strings only when asked for (the query asks the ad id of views only, a third of the
 * events). Events are flat objects: string, number, {@code true}/{@code false}/{@code null} values;
 * {@code event_time} is epoch milliseconds as a number or a string of digits. A hand parser instead
 * of Jackson because the query needs 3 of 7 fields and this one allocates nothing for the other
 * four.
 *
 * <p>Reusable and not thread-safe: {@link #parse} overwrites the previous event.
 */
public final class YsbEventParser {

    private static final byte[] AD_ID = ascii("ad_id");
    private static final byte[] EVENT_TYPE = ascii("event_type");
    private static final byte[] EVENT_TIME = ascii("event_time");
    private static final byte[] VIEW = ascii("view");

    // Eight bytes at a time: a byte's high bit in these masks marks a quote, a backslash or a
    // control character (the classic "has a zero byte" trick; the lowest marked byte is exact).
    private static final VarHandle LONGS =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long ONES = 0x0101010101010101L;
    private static final long HIGHS = 0x8080808080808080L;
    private static final long QUOTES = ONES * '"';
    private static final long BACKSLASHES = ONES * '\\';
    private static final long SPACES = ONES * ' ';

    private byte[] json;
    private int pos;

    // The last parsed event: ad id and event type as byte ranges of json, event time.
    private int adStart;
    private int adEnd;
    private boolean adEscaped;
    private int typeStart;
    private int typeEnd;
    private boolean typeEscaped;
    private long eventTime;

    /**
     * Parses one event.
     *
     * @throws IllegalArgumentException naming the problem and the byte offset, when the JSON is
     *     malformed or one of the three fields is missing or of the wrong kind
     */
    public void parse(byte[] event) {
        this.json = event;
        this.pos = 0;
        adStart = -1;
        typeStart = -1;
        eventTime = Long.MIN_VALUE;
        boolean sawTime = false;
        skipSpace();
        expect('{');
        skipSpace();
        if (peek() == '}') {
            pos++;
        } else {
            while (true) {
                skipSpace();
                int keyStart = pos + 1;
                boolean keyEscaped = string();
                int keyEnd = pos - 1;
                skipSpace();
                expect(':');
                skipSpace();
                if (!keyEscaped && is(keyStart, keyEnd, AD_ID)) {
                    requireString("ad_id");
                    adStart = pos + 1;
                    adEscaped = string();
                    adEnd = pos - 1;
                } else if (!keyEscaped && is(keyStart, keyEnd, EVENT_TYPE)) {
                    requireString("event_type");
                    typeStart = pos + 1;
                    typeEscaped = string();
                    typeEnd = pos - 1;
                } else if (!keyEscaped && is(keyStart, keyEnd, EVENT_TIME)) {
                    eventTime = timeValue();
                    sawTime = true;
                } else {
                    skipValue();
                }
                skipSpace();
                byte b = next();
                if (b == '}') {
                    break;
                }
                if (b != ',') {
                    throw error("expected ',' or '}'", pos - 1);
                }
            }
        }
        skipSpace();
        if (pos != json.length) {
            throw error("trailing bytes after the object", pos);
        }
        if (adStart < 0 || typeStart < 0 || !sawTime) {
            throw new IllegalArgumentException(
                    "YSB event lacks "
                            + (adStart < 0 ? "ad_id" : typeStart < 0 ? "event_type" : "event_time")
                            + ": "
                            + new String(json, StandardCharsets.UTF_8));
        }
    }

    /** The last event's {@code ad_id} (a new string each call). */
    public String adId() {
        return text(adStart, adEnd, adEscaped);
    }

    /**
     * The campaign index {@code table} gives the last event's {@code ad_id}, or -1 when the ad is
     * not in it; looked up in place, with no string built unless the id has escapes.
     */
    public int campaignIndexOfAd(AdCampaignTable table) {
        return adEscaped ? table.campaignIndex(adId()) : table.campaignIndex(json, adStart, adEnd);
    }

    /** The last event's {@code event_time}, epoch milliseconds. */
    public long eventTime() {
        return eventTime;
    }

    /** Whether the last event's type is {@code view}, without building a string. */
    public boolean isView() {
        return !typeEscaped && is(typeStart, typeEnd, VIEW);
    }

    /** The last event's {@code event_type}. */
    public String eventType() {
        return text(typeStart, typeEnd, typeEscaped);
    }

    // ---- scanning ---------------------------------------------------------------------------

    private String text(int start, int end, boolean escaped) {
        return escaped
                ? decode(start, end)
                : new String(json, start, end - start, StandardCharsets.UTF_8);
    }

    private void requireString(String field) {
        if (peek() != '"') {
            throw error(field + " must be a string", pos);
        }
    }

    private long timeValue() {
        boolean quoted = peek() == '"';
        int start = quoted ? pos + 1 : pos;
        if (quoted) {
            if (string()) {
                throw error("event_time must be digits", start);
            }
        } else {
            number();
        }
        int end = quoted ? pos - 1 : pos;
        if (end == start || end - start > 18) {
            throw error("event_time must be 1 to 18 digits of epoch milliseconds", start);
        }
        long v = 0;
        for (int i = start; i < end; i++) {
            byte b = json[i];
            if (b < '0' || b > '9') {
                throw error("event_time must be digits of epoch milliseconds", i);
            }
            v = v * 10 + (b - '0');
        }
        return v;
    }

    /** Skips a string starting at pos (the opening quote); returns whether it had escapes. */
    private boolean string() {
        expect('"');
        // Fast path, the whole string of a YSB event: plain bytes up to the closing quote, eight
        // at a time to the first byte that may end the fast path, then one at a time.
        byte[] j = json;
        int p = pos;
        while (p + Long.BYTES <= j.length) {
            long w = (long) LONGS.get(j, p);
            long q = w ^ QUOTES;
            long b = w ^ BACKSLASHES;
            long marked = ((q - ONES) & ~q | (b - ONES) & ~b | (w - SPACES) & ~w) & HIGHS;
            if (marked != 0) {
                p += Long.numberOfTrailingZeros(marked) >>> 3;
                break;
            }
            p += Long.BYTES;
        }
        while (p < j.length) {
            byte b = j[p];
            if (b == '"') {
                pos = p + 1;
                return false;
            }
            if (b == '\\' || (b & 0xFF) < 0x20) {
                break;
            }
            p++;
        }
        pos = p; // an escape, a control character or the end: checked one byte at a time
        boolean escaped = false;
        while (true) {
            byte b = next();
            if (b == '"') {
                return escaped;
            }
            if (b == '\\') {
                escaped = true;
                byte e = next();
                if (e == 'u') {
                    for (int i = 0; i < 4; i++) {
                        if (Character.digit(next(), 16) < 0) {
                            throw error("bad \\u escape", pos - 1);
                        }
                    }
                } else if ("\"\\/bfnrt".indexOf(e) < 0) {
                    throw error("bad escape", pos - 1);
                }
            } else if ((b & 0xFF) < 0x20) {
                throw error("control character in a string", pos - 1);
            }
        }
    }

    private void number() {
        int start = pos;
        while (pos < json.length && "+-0123456789.eE".indexOf(json[pos]) >= 0) {
            pos++;
        }
        if (pos == start) {
            throw error("expected a value", start);
        }
    }

    private void skipValue() {
        byte b = peek();
        if (b == '"') {
            string();
        } else if (b == '{' || b == '[') {
            throw error("nested objects and arrays are not YSB events", pos);
        } else if (b == 't') {
            literal("true");
        } else if (b == 'f') {
            literal("false");
        } else if (b == 'n') {
            literal("null");
        } else {
            number();
        }
    }

    private void literal(String word) {
        for (int i = 0; i < word.length(); i++) {
            if (next() != word.charAt(i)) {
                throw error("expected " + word, pos - 1);
            }
        }
    }

    private void skipSpace() {
        while (pos < json.length) {
            byte b = json[pos];
            if (b != ' ' && b != '\t' && b != '\n' && b != '\r') {
                return;
            }
            pos++;
        }
    }

    private void expect(char c) {
        if (next() != c) {
            throw error("expected '" + c + "'", pos - 1);
        }
    }

    private byte peek() {
        if (pos >= json.length) {
            throw error("unexpected end", pos);
        }
        return json[pos];
    }

    private byte next() {
        byte b = peek();
        pos++;
        return b;
    }

    private boolean is(int start, int end, byte[] expected) {
        if (end - start != expected.length) {
            return false;
        }
        for (int i = 0; i < expected.length; i++) {
            if (json[start + i] != expected[i]) {
                return false;
            }
        }
        return true;
    }

    /** Decodes a string body with escapes (rare: YSB ids and types have none). */
    private String decode(int start, int end) {
        String raw = new String(json, start, end - start, StandardCharsets.UTF_8);
        StringBuilder sb = new StringBuilder(raw.length());
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            if (c != '\\') {
                sb.append(c);
                continue;
            }
            char e = raw.charAt(++i);
            switch (e) {
                case 'b' -> sb.append('\b');
                case 'f' -> sb.append('\f');
                case 'n' -> sb.append('\n');
                case 'r' -> sb.append('\r');
                case 't' -> sb.append('\t');
                case 'u' -> {
                    sb.append((char) Integer.parseInt(raw.substring(i + 1, i + 5), 16));
                    i += 4;
                }
                default -> sb.append(e);
            }
        }
        return sb.toString();
    }

    private IllegalArgumentException error(String what, int at) {
        return new IllegalArgumentException(
                "malformed YSB event JSON: "
                        + what
                        + " at byte "
                        + at
                        + ": "
                        + new String(json, StandardCharsets.UTF_8));
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
