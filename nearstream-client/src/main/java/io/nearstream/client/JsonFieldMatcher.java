package io.nearstream.client;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * The matcher of {@link RecordFilter#jsonFieldIn}: a strict RFC 8259 reader over one record that
 * finds one top-level member and compares its string value with a set. It validates everything it
 * passes over (a record that is not JSON fails whatever its member says), decodes a name or value
 * only when it holds escapes, and keeps its container stack in an array (no recursion), exactly as
 * the broker's push thread does (native {@code push/record_filter.cc}).
 */
final class JsonFieldMatcher {

    private final byte[] field;
    private final byte[][] values; // sorted by unsigned bytes

    JsonFieldMatcher(String field, List<String> values) {
        this.field = field.getBytes(StandardCharsets.UTF_8);
        byte[][] v = new byte[values.size()][];
        for (int i = 0; i < v.length; i++) {
            v[i] = values.get(i).getBytes(StandardCharsets.UTF_8);
        }
        Arrays.sort(v, Arrays::compareUnsigned);
        this.values = v;
    }

    /** Whether the record in {@code buf[from, to)} passes. */
    boolean matches(byte[] buf, int from, int to) {
        return new Cursor(buf, from, to).topLevelMatches(this);
    }

    private boolean isValue(byte[] buf, int from, int to) {
        int lo = 0;
        int hi = values.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            int c = Arrays.compareUnsigned(values[mid], 0, values[mid].length, buf, from, to);
            if (c == 0) {
                return true;
            }
            if (c < 0) {
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return false;
    }

    /** One pass over one record. */
    private static final class Cursor {
        private final byte[] b;
        private final int end;
        private int p;
        // The last string read: its raw bytes are b[strFrom, strTo); whether it holds escapes.
        private int strFrom;
        private int strTo;
        private boolean escaped;

        Cursor(byte[] b, int from, int to) {
            this.b = b;
            this.p = from;
            this.end = to;
        }

        boolean topLevelMatches(JsonFieldMatcher m) {
            if (!take('{')) {
                return false;
            }
            boolean passes = false; // whether any member named like the field holds a value
            if (!take('}')) {
                while (true) {
                    if (!string() || !take(':')) {
                        return false;
                    }
                    boolean isField = equalsDecoded(m.field);
                    if (isField && peek('"')) {
                        if (!string()) {
                            return false;
                        }
                        passes |= valueIsIn(m);
                    } else if (!skipValue(1)) {
                        return false;
                    }
                    if (take(',')) {
                        continue;
                    }
                    if (take('}')) {
                        break;
                    }
                    return false;
                }
            }
            skipSpace();
            return p == end && passes;
        }

        private boolean equalsDecoded(byte[] expected) {
            if (!escaped) {
                return Arrays.equals(b, strFrom, strTo, expected, 0, expected.length);
            }
            byte[] decoded = unescape();
            return decoded != null && Arrays.equals(decoded, expected);
        }

        private boolean valueIsIn(JsonFieldMatcher m) {
            if (!escaped) {
                return m.isValue(b, strFrom, strTo);
            }
            byte[] decoded = unescape();
            return decoded != null && m.isValue(decoded, 0, decoded.length);
        }

        private void skipSpace() {
            while (p < end) {
                byte c = b[p];
                if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                    return;
                }
                p++;
            }
        }

        private boolean take(char c) {
            skipSpace();
            if (p < end && b[p] == c) {
                p++;
                return true;
            }
            return false;
        }

        private boolean peek(char c) {
            skipSpace();
            return p < end && b[p] == c;
        }

        /** Reads a string (after optional whitespace) into strFrom/strTo/escaped. */
        private boolean string() {
            if (!take('"')) {
                return false;
            }
            strFrom = p;
            escaped = false;
            while (p < end) {
                int c = b[p] & 0xFF;
                if (c == '"') {
                    strTo = p++;
                    return true;
                }
                if (c < 0x20) {
                    return false; // a raw control character
                }
                if (c == '\\') {
                    escaped = true;
                    if (++p == end) {
                        return false;
                    }
                    int e = b[p];
                    if (e == 'u') {
                        if (end - p < 5) {
                            return false;
                        }
                        for (int i = 1; i <= 4; i++) {
                            if (hexValue(b[p + i]) < 0) {
                                return false;
                            }
                        }
                        p += 4;
                    } else if ("\"\\/bfnrt".indexOf(e) < 0) {
                        return false;
                    }
                }
                p++;
            }
            return false; // no closing quote
        }

        /** Skips one value of any type; {@code depth} is that of the container holding it. */
        private boolean skipValue(int depth) {
            boolean[] isObject = null; // containers this call opened, allocated when nesting
            int top = 0;
            while (true) {
                skipSpace();
                if (p == end) {
                    return false;
                }
                int c = b[p];
                if (c == '{' || c == '[') {
                    if (depth + top + 1 > RecordFilter.MAX_JSON_DEPTH) {
                        return false;
                    }
                    if (isObject == null) {
                        isObject = new boolean[RecordFilter.MAX_JSON_DEPTH + 1];
                    }
                    p++;
                    isObject[++top] = c == '{';
                    if (take(c == '{' ? '}' : ']')) {
                        top--;
                    } else if (c == '{') {
                        if (!string() || !take(':')) {
                            return false;
                        }
                        continue; // the member's value
                    } else {
                        continue; // the array's first element
                    }
                } else if (c == '"') {
                    if (!string()) {
                        return false;
                    }
                } else if (c == '-' || (c >= '0' && c <= '9')) {
                    if (!number()) {
                        return false;
                    }
                } else if (!literal("true") && !literal("false") && !literal("null")) {
                    return false;
                }
                // After a value: close containers, or go on with the next element or member.
                while (true) {
                    if (top == 0) {
                        return true;
                    }
                    if (take(',')) {
                        if (isObject[top] && (!string() || !take(':'))) {
                            return false;
                        }
                        break;
                    }
                    if (!take(isObject[top] ? '}' : ']')) {
                        return false;
                    }
                    top--;
                }
            }
        }

        private boolean digits() {
            int start = p;
            while (p < end && b[p] >= '0' && b[p] <= '9') {
                p++;
            }
            return p != start;
        }

        /** -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
        private boolean number() {
            if (b[p] == '-') {
                p++;
            }
            if (p == end) {
                return false;
            }
            if (b[p] == '0') {
                p++;
            } else if (!digits()) {
                return false;
            }
            if (p < end && b[p] == '.') {
                p++;
                if (!digits()) {
                    return false;
                }
            }
            if (p < end && (b[p] == 'e' || b[p] == 'E')) {
                p++;
                if (p < end && (b[p] == '+' || b[p] == '-')) {
                    p++;
                }
                if (!digits()) {
                    return false;
                }
            }
            return true;
        }

        private boolean literal(String word) {
            int n = word.length();
            if (end - p < n) {
                return false;
            }
            for (int i = 0; i < n; i++) {
                if (b[p + i] != word.charAt(i)) {
                    return false;
                }
            }
            p += n;
            return true;
        }

        private static int hexValue(int c) {
            if (c >= '0' && c <= '9') {
                return c - '0';
            }
            if (c >= 'a' && c <= 'f') {
                return c - 'a' + 10;
            }
            if (c >= 'A' && c <= 'F') {
                return c - 'A' + 10;
            }
            return -1;
        }

        /**
         * The last string's bytes with its escapes decoded (a validated string), or null when it
         * holds an unpaired surrogate escape (such a string equals no value).
         */
        private byte[] unescape() {
            byte[] out = new byte[strTo - strFrom];
            int n = 0;
            for (int i = strFrom; i < strTo; i++) {
                byte c = b[i];
                if (c != '\\') {
                    out[n++] = c;
                    continue;
                }
                byte e = b[++i];
                switch (e) {
                    case 'b' -> out[n++] = '\b';
                    case 'f' -> out[n++] = '\f';
                    case 'n' -> out[n++] = '\n';
                    case 'r' -> out[n++] = '\r';
                    case 't' -> out[n++] = '\t';
                    case 'u' -> {
                        int cp = hex4(i + 1);
                        i += 4;
                        if (cp >= 0xDC00 && cp <= 0xDFFF) {
                            return null; // a low surrogate first
                        }
                        if (cp >= 0xD800 && cp <= 0xDBFF) {
                            // A high surrogate pairs only with a low one escaped right after it.
                            if (i + 6 >= strTo || b[i + 1] != '\\' || b[i + 2] != 'u') {
                                return null;
                            }
                            int low = hex4(i + 3);
                            if (low < 0xDC00 || low > 0xDFFF) {
                                return null;
                            }
                            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                            i += 6;
                        }
                        n = appendUtf8(cp, out, n);
                    }
                    default -> out[n++] = e; // " \ /
                }
            }
            return Arrays.copyOf(out, n);
        }

        private int hex4(int at) {
            int v = 0;
            for (int i = 0; i < 4; i++) {
                v = v * 16 + hexValue(b[at + i]);
            }
            return v;
        }

        private static int appendUtf8(int cp, byte[] out, int n) {
            if (cp < 0x80) {
                out[n++] = (byte) cp;
            } else if (cp < 0x800) {
                out[n++] = (byte) (0xC0 | (cp >> 6));
                out[n++] = (byte) (0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                out[n++] = (byte) (0xE0 | (cp >> 12));
                out[n++] = (byte) (0x80 | ((cp >> 6) & 0x3F));
                out[n++] = (byte) (0x80 | (cp & 0x3F));
            } else {
                out[n++] = (byte) (0xF0 | (cp >> 18));
                out[n++] = (byte) (0x80 | ((cp >> 12) & 0x3F));
                out[n++] = (byte) (0x80 | ((cp >> 6) & 0x3F));
                out[n++] = (byte) (0x80 | (cp & 0x3F));
            }
            return n;
        }
    }
}
