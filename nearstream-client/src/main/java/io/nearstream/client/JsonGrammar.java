package io.nearstream.client;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * The strict RFC 8259 grammar {@link JsonFieldMatcher} reads records with, over bytes: each method
 * takes a position and returns the position after what it read, or -1 when the bytes there are not
 * what the grammar allows. Static and allocation-free (positions travel in return values, the
 * container stack of {@link #skipValue} in a {@code long} for the first 64 levels), because a push
 * source may filter millions of records a second on one thread. Whitespace is space, tab, LF and CR
 * only; nesting deeper than {@link RecordFilter#MAX_JSON_DEPTH} fails.
 */
final class JsonGrammar {

    /** Set in {@link #string}'s result when the string holds an escape. */
    static final long ESCAPED = 1L << 32;

    private static final VarHandle LONGS =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long ONES = 0x0101010101010101L;
    private static final long HIGHS = 0x8080808080808080L;
    private static final long QUOTES = ONES * '"';
    private static final long BACKSLASHES = ONES * '\\';
    private static final long SPACES = ONES * 0x20;

    private JsonGrammar() {}

    static int skipSpace(byte[] b, int p, int end) {
        while (p < end) {
            byte c = b[p];
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                break;
            }
            p++;
        }
        return p;
    }

    /**
     * Reads the string whose opening quote is at {@code p}: its content is {@code b[p + 1, (int)
     * result - 1)}; the result also carries {@link #ESCAPED}. -1 for a raw control character, an
     * escape RFC 8259 does not have, or no closing quote.
     */
    static long string(byte[] b, int p, int end) {
        int i = p + 1;
        boolean escaped = false;
        while (i < end) {
            // Eight bytes at a time past those that need no look (most of a record's bytes are in
            // strings). The lowest flagged byte is a special one; a borrow may flag bytes above it
            // that are not, which the byte-wise step below then passes over.
            while (end - i >= 8) {
                long w = (long) LONGS.get(b, i);
                long special = zeroBytes(w ^ QUOTES) | zeroBytes(w ^ BACKSLASHES) | below20(w);
                if (special != 0) {
                    i += Long.numberOfTrailingZeros(special) >>> 3;
                    break;
                }
                i += 8;
            }
            if (i == end) {
                break;
            }
            int c = b[i] & 0xFF;
            if (c == '"') {
                return (i + 1) | (escaped ? ESCAPED : 0L);
            }
            if (c < 0x20) {
                return -1; // a raw control character
            }
            if (c == '\\') {
                escaped = true;
                if (end - i < 2) {
                    return -1;
                }
                int e = b[i + 1];
                if (e == 'u') {
                    if (end - i < 6) {
                        return -1;
                    }
                    for (int k = 2; k < 6; k++) {
                        if (hexValue(b[i + k]) < 0) {
                            return -1;
                        }
                    }
                    i += 6;
                    continue;
                }
                if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n'
                        && e != 'r' && e != 't') {
                    return -1;
                }
                i += 2;
                continue;
            }
            i++;
        }
        return -1; // no closing quote
    }

    /** Bit 7 of each byte of {@code w} that is zero; exact for the lowest such byte. */
    private static long zeroBytes(long w) {
        return (w - ONES) & ~w & HIGHS;
    }

    /** Bit 7 of each byte of {@code w} below 0x20; exact for the lowest such byte. */
    private static long below20(long w) {
        return (w - SPACES) & ~w & HIGHS;
    }

    /**
     * A member's name at {@code p} (after whitespace) and its colon; returns where its value is.
     */
    static int memberName(byte[] b, int p, int end) {
        if (p == end || b[p] != '"') {
            return -1;
        }
        long s = string(b, p, end);
        if (s < 0) {
            return -1;
        }
        p = skipSpace(b, (int) s, end);
        if (p == end || b[p] != ':') {
            return -1;
        }
        return skipSpace(b, p + 1, end);
    }

    /**
     * Skips the value at {@code p} (after whitespace), of any type; {@code depth} is the nesting
     * depth of the container holding it (the top-level object's members: 1).
     */
    static int skipValue(byte[] b, int p, int end, int depth) {
        // Whether each container this call opened is an object: level t (1-based) is bit t - 1
        // of `near` up to 64 levels, beyond that a bit of `far` (made only for such records).
        long near = 0;
        long[] far = null;
        int top = 0;
        while (true) {
            if (p == end) {
                return -1;
            }
            int c = b[p];
            if (c == '{' || c == '[') {
                if (depth + top + 1 > RecordFilter.MAX_JSON_DEPTH) {
                    return -1;
                }
                boolean object = c == '{';
                if (top < 64) {
                    near = object ? near | (1L << top) : near & ~(1L << top);
                } else {
                    if (far == null) {
                        far = new long[(RecordFilter.MAX_JSON_DEPTH >> 6) + 1];
                    }
                    int t = top - 64;
                    far[t >> 6] = object ? far[t >> 6] | (1L << t) : far[t >> 6] & ~(1L << t);
                }
                top++;
                p = skipSpace(b, p + 1, end);
                if (p < end && b[p] == (object ? '}' : ']')) {
                    top--;
                    p++;
                } else {
                    // The member's value or the array's first element is next.
                    p = object ? memberName(b, p, end) : p;
                    if (p < 0) {
                        return -1;
                    }
                    continue;
                }
            } else if (c == '"') {
                long s = string(b, p, end);
                if (s < 0) {
                    return -1;
                }
                p = (int) s;
            } else if (c == '-' || (c >= '0' && c <= '9')) {
                p = number(b, p, end);
            } else {
                p = literal(b, p, end);
            }
            if (p < 0) {
                return -1;
            }
            // After a value: close containers, or go on with the next element or member.
            while (top > 0) {
                p = skipSpace(b, p, end);
                if (p == end) {
                    return -1;
                }
                boolean object = isObject(near, far, top - 1);
                if (b[p] == ',') {
                    p = skipSpace(b, p + 1, end);
                    p = object ? memberName(b, p, end) : p;
                    if (p < 0) {
                        return -1;
                    }
                    break;
                }
                if (b[p] != (object ? '}' : ']')) {
                    return -1;
                }
                p++;
                top--;
            }
            if (top == 0) {
                return p;
            }
        }
    }

    private static boolean isObject(long near, long[] far, int level) {
        if (level < 64) {
            return (near & (1L << level)) != 0;
        }
        int t = level - 64;
        return (far[t >> 6] & (1L << t)) != 0;
    }

    /** {@code -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?} at {@code p}. */
    static int number(byte[] b, int p, int end) {
        if (b[p] == '-') {
            p++;
        }
        if (p < end && b[p] == '0') {
            p++;
        } else if ((p = digits(b, p, end)) < 0) {
            return -1;
        }
        if (p < end && b[p] == '.' && (p = digits(b, p + 1, end)) < 0) {
            return -1;
        }
        if (p < end && (b[p] == 'e' || b[p] == 'E')) {
            p++;
            if (p < end && (b[p] == '+' || b[p] == '-')) {
                p++;
            }
            return digits(b, p, end);
        }
        return p;
    }

    /** One or more digits at {@code p}. */
    private static int digits(byte[] b, int p, int end) {
        int start = p;
        while (p < end && b[p] >= '0' && b[p] <= '9') {
            p++;
        }
        return p == start ? -1 : p;
    }

    /** {@code true}, {@code false} or {@code null} at {@code p}. */
    static int literal(byte[] b, int p, int end) {
        String word;
        switch (b[p]) {
            case 't' -> word = "true";
            case 'f' -> word = "false";
            case 'n' -> word = "null";
            default -> {
                return -1;
            }
        }
        int n = word.length();
        if (end - p < n) {
            return -1;
        }
        for (int i = 1; i < n; i++) {
            if (b[p + i] != word.charAt(i)) {
                return -1;
            }
        }
        return p + n;
    }

    static int hexValue(int c) {
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
}
