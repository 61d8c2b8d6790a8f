package io.nearstream.client;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * The matcher of {@link RecordFilter#jsonFieldIn}: reads one record with {@link JsonGrammar},
 * validating everything it passes over (a record that is not JSON fails whatever its member says),
 * and compares each top-level member named like the field, when its value is a string, with the
 * values; a repeated name passes the record when any of its values does. The same function as the
 * broker's push thread. Allocates nothing for records nested less than 64 deep: names and values
 * with escapes are compared as they decode, not decoded into a buffer.
 */
final class JsonFieldMatcher {

    private final byte[] field;
    private final byte[][] values; // UTF-8, sorted as unsigned bytes for a binary search

    JsonFieldMatcher(String field, List<String> values) {
        this.field = field.getBytes(StandardCharsets.UTF_8);
        byte[][] v = new byte[values.size()][];
        for (int i = 0; i < v.length; i++) {
            v[i] = values.get(i).getBytes(StandardCharsets.UTF_8);
        }
        Arrays.sort(v, Arrays::compareUnsigned);
        this.values = v;
    }

    /** Whether the record in {@code b[from, end)} passes. */
    boolean matches(byte[] b, int from, int end) {
        int p = JsonGrammar.skipSpace(b, from, end);
        if (p == end || b[p] != '{') {
            return false;
        }
        p = JsonGrammar.skipSpace(b, p + 1, end);
        if (p < end && b[p] == '}') {
            return false; // no member at all
        }
        boolean passes = false;
        while (true) {
            if (p == end || b[p] != '"') {
                return false;
            }
            long name = JsonGrammar.string(b, p, end);
            if (name < 0) {
                return false;
            }
            int nameFrom = p + 1;
            int nameTo = (int) name - 1;
            boolean nameEscaped = (name & JsonGrammar.ESCAPED) != 0;
            p = JsonGrammar.skipSpace(b, (int) name, end);
            if (p == end || b[p] != ':') {
                return false;
            }
            p = JsonGrammar.skipSpace(b, p + 1, end);
            if (p < end && b[p] == '"' && isField(b, nameFrom, nameTo, nameEscaped)) {
                long value = JsonGrammar.string(b, p, end);
                if (value < 0) {
                    return false;
                }
                passes =
                        passes
                                || isValue(
                                        b,
                                        p + 1,
                                        (int) value - 1,
                                        (value & JsonGrammar.ESCAPED) != 0);
                p = (int) value;
            } else if ((p = JsonGrammar.skipValue(b, p, end, 1)) < 0) {
                return false;
            }
            p = JsonGrammar.skipSpace(b, p, end);
            if (p == end) {
                return false;
            }
            if (b[p] == '}') {
                // The rest may only be whitespace: a record is exactly one JSON text.
                return passes && JsonGrammar.skipSpace(b, p + 1, end) == end;
            }
            if (b[p] != ',') {
                return false;
            }
            p = JsonGrammar.skipSpace(b, p + 1, end);
        }
    }

    private boolean isField(byte[] b, int from, int to, boolean escaped) {
        if (!escaped) {
            return Arrays.equals(b, from, to, field, 0, field.length);
        }
        return !JsonEscapes.hasUnpairedSurrogate(b, from, to)
                && JsonEscapes.compare(b, from, to, field) == 0;
    }

    private boolean isValue(byte[] b, int from, int to, boolean escaped) {
        if (escaped && JsonEscapes.hasUnpairedSurrogate(b, from, to)) {
            return false;
        }
        int lo = 0;
        int hi = values.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            // The order of the record's string against values[mid].
            int c =
                    escaped
                            ? JsonEscapes.compare(b, from, to, values[mid])
                            : Arrays.compareUnsigned(
                                    b, from, to, values[mid], 0, values[mid].length);
            if (c == 0) {
                return true;
            }
            if (c > 0) {
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return false;
    }
}
