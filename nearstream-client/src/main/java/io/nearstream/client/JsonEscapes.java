package io.nearstream.client;

/**
 * Compares the content of a JSON string that holds escapes (one {@link JsonGrammar#string} has
 * validated) with UTF-8 bytes as if it were decoded, without decoding it into a buffer: {@code
 * \u00e9} stands for the bytes C3 A9, a {@code \uD83D\uDE00} pair for the four bytes of its one
 * code point, and bytes that are not escapes (0x80 and above included) for themselves.
 */
final class JsonEscapes {

    private JsonEscapes() {}

    /**
     * Whether {@code b[from, to)} holds a surrogate escape that is not a high one followed at once
     * by an escaped low one. Such a string equals no value (values are well-formed UTF-8), and
     * {@link #compare} must not see one.
     */
    static boolean hasUnpairedSurrogate(byte[] b, int from, int to) {
        int i = from;
        while (i < to) {
            if (b[i] != '\\') {
                i++;
                continue;
            }
            if (b[i + 1] != 'u') {
                i += 2;
                continue;
            }
            int cp = hex4(b, i + 2);
            i += 6;
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                return true; // a low surrogate first
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (to - i < 6 || b[i] != '\\' || b[i + 1] != 'u') {
                    return true;
                }
                int low = hex4(b, i + 2);
                if (low < 0xDC00 || low > 0xDFFF) {
                    return true;
                }
                i += 6;
            }
        }
        return false;
    }

    /**
     * The order of the decoded {@code b[from, to)} against {@code v}, as unsigned bytes: negative,
     * zero or positive as for {@link java.util.Arrays#compareUnsigned}'s sign.
     */
    static int compare(byte[] b, int from, int to, byte[] v) {
        int k = 0; // decoded bytes compared so far
        int i = from;
        while (i < to) {
            int c = b[i] & 0xFF;
            if (c != '\\') {
                int d = compareByte(c, v, k++);
                if (d != 0) {
                    return d;
                }
                i++;
                continue;
            }
            int e = b[i + 1];
            int cp;
            if (e == 'u') {
                cp = hex4(b, i + 2);
                i += 6;
                if (cp >= 0xD800 && cp <= 0xDBFF) { // paired: hasUnpairedSurrogate said so
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (hex4(b, i + 2) - 0xDC00);
                    i += 6;
                }
            } else {
                cp = unescaped(e);
                i += 2;
            }
            int n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
            for (int j = 0; j < n; j++) {
                int d = compareByte(utf8Byte(cp, n, j), v, k++);
                if (d != 0) {
                    return d;
                }
            }
        }
        return k == v.length ? 0 : -1; // v goes on: the decoded string is its prefix
    }

    private static int compareByte(int decoded, byte[] v, int k) {
        return k < v.length ? Integer.compare(decoded, v[k] & 0xFF) : 1;
    }

    /** Byte {@code j} of the {@code n}-byte UTF-8 form of {@code cp}. */
    private static int utf8Byte(int cp, int n, int j) {
        if (n == 1) {
            return cp;
        }
        int shift = 6 * (n - 1 - j);
        if (j == 0) {
            int lead = n == 2 ? 0xC0 : n == 3 ? 0xE0 : 0xF0;
            return lead | (cp >> shift);
        }
        return 0x80 | ((cp >> shift) & 0x3F);
    }

    /** What a one-character escape ({@code \" \\ \/ \b \f \n \r \t}) stands for. */
    private static int unescaped(int e) {
        switch (e) {
            case 'b':
                return '\b';
            case 'f':
                return '\f';
            case 'n':
                return '\n';
            case 'r':
                return '\r';
            case 't':
                return '\t';
            default:
                return e; // " \ /
        }
    }

    private static int hex4(byte[] b, int at) {
        int v = 0;
        for (int i = 0; i < 4; i++) {
            v = v * 16 + JsonGrammar.hexValue(b[at + i]);
        }
        return v;
    }
}
