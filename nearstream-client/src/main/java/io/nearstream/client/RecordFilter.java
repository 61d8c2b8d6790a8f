package io.nearstream.client;

import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;

/**
 * A filter on records' bytes (docs/protocol.md, "Record filters"): a push subscription carries one
 * so the broker's push thread writes only the records that pass it into the slots, and the source
 * applies the same function to records it fetches, so a job gets the same records whichever side
 * filters. Both implementations are checked against {@code testdata/record-filters/cases.tsv},
 * written by an independent implementation.
 *
 * <ul>
 *   <li>{@link #jsonFieldIn}: the record is one JSON object (RFC 8259, strictly) whose top-level
 *       member {@code field} (any one of them, when the name repeats) is a string equal, after its
 *       escapes are decoded, to one of the values; anything else fails.
 *   <li>{@link #bytesContain}: the record's bytes contain the needle.
 *   <li>{@link #none}: every record passes.
 * </ul>
 *
 * <p>Immutable, thread-safe and serializable (a Flink source ships it with its configuration);
 * {@link #matches} allocates nothing (unless a JSON record nests deeper than 64 levels), so it can
 * run once per record at millions of records a second.
 */
public final class RecordFilter implements Serializable {

    private static final long serialVersionUID = 1L;

    /** The wire's filter kinds (PushSubscribe's RecordFilter). */
    public enum Kind {
        NONE(0),
        JSON_FIELD_IN(1),
        BYTES_CONTAIN(2);

        public final int code;

        Kind(int code) {
            this.code = code;
        }
    }

    /** Bounds of docs/protocol.md. */
    public static final int MAX_FIELD_BYTES = 65535;

    public static final int MAX_VALUES = 4096;
    public static final int MAX_VALUE_BYTES = 65535;
    public static final int MAX_NEEDLE_BYTES = 65536;

    /** Nesting deeper than this fails a JSON filter (the top-level object is depth 1). */
    public static final int MAX_JSON_DEPTH = 1000;

    private static final RecordFilter NONE = new RecordFilter(Kind.NONE, null, List.of(), null);

    private final Kind kind;
    private final String field;
    private final List<String> values; // as given (the wire carries them so)
    private final byte[] needle;

    /**
     * The JSON filter's field and values as UTF-8, made with the filter (a deserialized copy makes
     * its own in {@link #readResolve}); null for other kinds.
     */
    private final transient JsonFieldMatcher json;

    private RecordFilter(Kind kind, String field, List<String> values, byte[] needle) {
        this.kind = kind;
        this.field = field;
        this.values = values;
        this.needle = needle;
        this.json = kind == Kind.JSON_FIELD_IN ? new JsonFieldMatcher(field, values) : null;
    }

    /**
     * A deserialized filter is made again by its factory: that checks the bounds again and makes
     * the matcher, which is not serialized.
     */
    private Object readResolve() {
        if (kind == null) {
            throw new IllegalArgumentException("a serialized record filter without a kind");
        }
        switch (kind) {
            case JSON_FIELD_IN:
                return jsonFieldIn(field, values);
            case BYTES_CONTAIN:
                return bytesContain(needle);
            default:
                return NONE;
        }
    }

    /** Every record passes. */
    public static RecordFilter none() {
        return NONE;
    }

    /**
     * Passes a JSON object whose top-level member {@code field} is a string equal to one of {@code
     * values}.
     *
     * @throws IllegalArgumentException outside the bounds docs/protocol.md gives (field 1–65 535
     *     UTF-8 bytes, 1–4096 values of at most 65 535 bytes), or for a field or value with an
     *     unpaired surrogate (it has no UTF-8 form)
     */
    public static RecordFilter jsonFieldIn(String field, Collection<String> values) {
        Objects.requireNonNull(field, "field");
        Objects.requireNonNull(values, "values");
        for (String v : values) {
            Objects.requireNonNull(v, "a JSON filter's value is null");
        }
        List<String> copy = List.copyOf(values); // checked as kept, whatever the caller does next
        int fieldBytes = utf8Length("field", field);
        if (fieldBytes == 0 || fieldBytes > MAX_FIELD_BYTES) {
            throw new IllegalArgumentException(
                    "a JSON filter's field must have 1 to "
                            + MAX_FIELD_BYTES
                            + " UTF-8 bytes, got "
                            + fieldBytes);
        }
        if (copy.isEmpty() || copy.size() > MAX_VALUES) {
            throw new IllegalArgumentException(
                    "a JSON filter needs 1 to " + MAX_VALUES + " values, got " + copy.size());
        }
        for (int i = 0; i < copy.size(); i++) {
            int valueBytes = utf8Length("value " + i, copy.get(i));
            if (valueBytes > MAX_VALUE_BYTES) {
                throw new IllegalArgumentException(
                        "a JSON filter's value "
                                + i
                                + " has "
                                + valueBytes
                                + " UTF-8 bytes, more than "
                                + MAX_VALUE_BYTES);
            }
        }
        return new RecordFilter(Kind.JSON_FIELD_IN, field, copy, null);
    }

    /**
     * The length of {@code s} in UTF-8. A string with an unpaired surrogate has none (encoding it
     * would replace the surrogate, and the filter would compare something else), so it is refused.
     */
    private static int utf8Length(String what, String s) {
        int n = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x80) {
                n += 1;
            } else if (c < 0x800) {
                n += 2;
            } else if (!Character.isSurrogate(c)) {
                n += 3;
            } else if (Character.isHighSurrogate(c)
                    && i + 1 < s.length()
                    && Character.isLowSurrogate(s.charAt(i + 1))) {
                n += 4;
                i++;
            } else {
                throw new IllegalArgumentException(
                        "a JSON filter's "
                                + what
                                + " is not well-formed UTF-16: an unpaired surrogate at index "
                                + i);
            }
        }
        return n;
    }

    /** {@link #jsonFieldIn(String, Collection)} with the values as arguments. */
    public static RecordFilter jsonFieldIn(String field, String... values) {
        return jsonFieldIn(field, Arrays.asList(values));
    }

    /**
     * Passes a record whose bytes contain {@code needle}.
     *
     * @throws IllegalArgumentException for a needle of no bytes or more than 65 536
     */
    public static RecordFilter bytesContain(byte[] needle) {
        Objects.requireNonNull(needle, "needle");
        if (needle.length == 0 || needle.length > MAX_NEEDLE_BYTES) {
            throw new IllegalArgumentException(
                    "a bytes filter's needle must have 1 to " + MAX_NEEDLE_BYTES + " bytes");
        }
        return new RecordFilter(Kind.BYTES_CONTAIN, null, List.of(), needle.clone());
    }

    public Kind kind() {
        return kind;
    }

    /** Whether every record passes. */
    public boolean passesAll() {
        return kind == Kind.NONE;
    }

    /** The JSON member's name ({@link Kind#JSON_FIELD_IN}), else null. */
    public String field() {
        return field;
    }

    /** The values a JSON member may equal, in the order given; empty for other kinds. */
    public List<String> values() {
        return values;
    }

    /** A copy of the needle ({@link Kind#BYTES_CONTAIN}), else null. */
    public byte[] needle() {
        return needle == null ? null : needle.clone();
    }

    /** Whether {@code record} passes. */
    public boolean matches(byte[] record) {
        return matches(record, 0, record.length);
    }

    /** Whether the record in {@code buf[off, off + len)} passes. */
    public boolean matches(byte[] buf, int off, int len) {
        Objects.checkFromIndexSize(off, len, buf.length);
        switch (kind) {
            case NONE:
                return true;
            case BYTES_CONTAIN:
                return indexOf(buf, off, len, needle) >= 0;
            default:
                return json.matches(buf, off, off + len);
        }
    }

    private static int indexOf(byte[] buf, int off, int len, byte[] needle) {
        int last = off + len - needle.length;
        byte first = needle[0];
        outer:
        for (int i = off; i <= last; i++) {
            if (buf[i] != first) {
                continue;
            }
            for (int j = 1; j < needle.length; j++) {
                if (buf[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    /**
     * A one-line form that {@link #parseSpec} reads back exactly (a Flink option carries it):
     * {@code none}, {@code bytes_contain:<needle hex>}, or {@code json_field_in:<field hex>:<value
     * hex>,<value hex>,...} with names and values as UTF-8 hex.
     */
    public String toSpec() {
        HexFormat hex = HexFormat.of();
        switch (kind) {
            case NONE:
                return "none";
            case BYTES_CONTAIN:
                return "bytes_contain:" + hex.formatHex(needle);
            default:
                StringBuilder s = new StringBuilder("json_field_in:");
                s.append(hex.formatHex(field.getBytes(StandardCharsets.UTF_8))).append(':');
                for (int i = 0; i < values.size(); i++) {
                    s.append(i == 0 ? "" : ",")
                            .append(hex.formatHex(values.get(i).getBytes(StandardCharsets.UTF_8)));
                }
                return s.toString();
        }
    }

    /**
     * The filter {@link #toSpec} wrote.
     *
     * @throws IllegalArgumentException for anything else
     */
    public static RecordFilter parseSpec(String spec) {
        String[] parts = spec.split(":", -1);
        try {
            HexFormat hex = HexFormat.of();
            if (parts.length == 1 && parts[0].equals("none")) {
                return NONE;
            }
            if (parts.length == 2 && parts[0].equals("bytes_contain")) {
                return bytesContain(hex.parseHex(parts[1]));
            }
            if (parts.length == 3 && parts[0].equals("json_field_in")) {
                List<String> values = new ArrayList<>();
                for (String v : parts[2].split(",", -1)) {
                    values.add(new String(hex.parseHex(v), StandardCharsets.UTF_8));
                }
                return jsonFieldIn(
                        new String(hex.parseHex(parts[1]), StandardCharsets.UTF_8), values);
            }
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("not a record filter spec: '" + spec + "'", e);
        }
        throw new IllegalArgumentException(
                "not a record filter spec: '"
                        + spec
                        + "' (none, bytes_contain:HEX or json_field_in:HEX:HEX,HEX...)");
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RecordFilter f
                && kind == f.kind
                && Objects.equals(field, f.field)
                && values.equals(f.values)
                && Arrays.equals(needle, f.needle);
    }

    @Override
    public int hashCode() {
        return Objects.hash(kind, field, values, Arrays.hashCode(needle));
    }

    @Override
    public String toString() {
        switch (kind) {
            case NONE:
                return "none";
            case BYTES_CONTAIN:
                return "bytes_contain(" + needle.length + " bytes)";
            default:
                return "json_field_in(" + field + " in " + values + ")";
        }
    }
}
