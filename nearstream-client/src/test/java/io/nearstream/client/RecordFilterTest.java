package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Hand-picked records for {@link RecordFilter} (docs/protocol.md, "Record filters"): each rule of
 * the JSON filter on its own, the nesting limit at its edge, the bounds the factories check, and
 * what a Flink source relies on (serialization, no allocation per record). RecordFilterCasesTest
 * checks the generated cases.
 */
class RecordFilterTest {

    private static final RecordFilter TYPES =
            RecordFilter.jsonFieldIn("event_type", "view", "click");

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static boolean passes(RecordFilter f, String json) {
        return f.matches(utf8(json));
    }

    @Test
    void findsTheTopLevelMemberOnly() {
        assertThat(passes(TYPES, "{\"ad\":\"1\",\"event_type\":\"view\",\"n\":[1,{}]}")).isTrue();
        assertThat(passes(TYPES, " \t\r\n{ \"event_type\" : \"click\" } \n")).isTrue();
        assertThat(passes(TYPES, "{\"a\":{\"event_type\":\"view\"}}")).isFalse();
        assertThat(passes(TYPES, "{\"a\":[\"event_type\",\"view\"]}")).isFalse();
        assertThat(passes(TYPES, "{\"event_typ\":\"view\"}")).isFalse();
        assertThat(passes(TYPES, "{\"event_types\":\"view\"}")).isFalse();
        assertThat(passes(TYPES, "{\"event_type\":\"views\"}")).isFalse();
        assertThat(passes(TYPES, "{\"event_type\":\"View\"}")).isFalse();
        assertThat(passes(TYPES, "{}")).isFalse();
    }

    @Test
    void theMembersValueMustBeAString() {
        for (String value :
                List.of("5", "true", "false", "null", "{}", "[\"view\"]", "{\"a\":1}")) {
            assertThat(passes(TYPES, "{\"event_type\":" + value + "}")).as(value).isFalse();
        }
    }

    @Test
    void aRepeatedNamePassesWhenAnyOfItsValuesDoes() {
        assertThat(passes(TYPES, "{\"event_type\":\"view\",\"event_type\":\"x\"}")).isTrue();
        assertThat(passes(TYPES, "{\"event_type\":\"x\",\"event_type\":\"view\"}")).isTrue();
        assertThat(passes(TYPES, "{\"event_type\":1,\"event_type\":\"click\"}")).isTrue();
        assertThat(passes(TYPES, "{\"event_type\":\"x\",\"event_type\":\"y\"}")).isFalse();
        // Still JSON throughout: a repeat after the passing one is read to the end.
        assertThat(passes(TYPES, "{\"event_type\":\"view\",\"event_type\":01}")).isFalse();
    }

    @Test
    void namesAndValuesAreComparedWithTheirEscapesDecoded() {
        assertThat(passes(TYPES, "{\"event_type\":\"cl\\u0069ck\"}")).isTrue();
        assertThat(passes(TYPES, "{\"\\u0065vent\\u005Ftype\":\"view\"}")).isTrue();
        assertThat(passes(TYPES, "{\"event_type\":\"vie\\w\"}")).isFalse(); // \w is no escape
        assertThat(passes(TYPES, "{\"event_type\":\"view\\u0000\"}")).isFalse();
        assertThat(passes(TYPES, "{\"event_type\":\"vi\\u0065\"}")).isFalse(); // "vie"

        RecordFilter f = RecordFilter.jsonFieldIn("k", "é", "a/b", "q\"\\\b\f\n\r\t", "😀");
        assertThat(passes(f, "{\"k\":\"é\"}")).isTrue(); // raw UTF-8
        assertThat(passes(f, "{\"k\":\"\\u00e9\"}")).isTrue();
        assertThat(passes(f, "{\"k\":\"\\u00E9\"}")).isTrue();
        assertThat(passes(f, "{\"k\":\"e\\u0301\"}")).isFalse(); // not normalized
        assertThat(passes(f, "{\"k\":\"a\\/b\"}")).isTrue();
        assertThat(passes(f, "{\"k\":\"q\\\"\\\\\\b\\f\\n\\r\\t\"}")).isTrue();
        assertThat(passes(f, "{\"k\":\"\\ud83d\\ude00\"}")).isTrue(); // one 4-byte code point
        assertThat(passes(f, "{\"k\":\"😀\"}")).isTrue();
        // The 3-byte forms of each surrogate (CESU-8) are not that code point.
        assertThat(f.matches(bytes("{\"k\":\"", 0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80, "\"}")))
                .isFalse();
    }

    @Test
    void anUnpairedSurrogateEscapeEqualsNothing() {
        // What a decoder that replaces an unpaired surrogate might make of it.
        RecordFilter f = RecordFilter.jsonFieldIn("k", "?", "\ufffd", "");
        for (String value :
                List.of(
                        "\\ud83d",
                        "\\ude00",
                        "\\ude00\\ud83d",
                        "\\ud83d\\u0041",
                        "\\ud83dx\\ude00",
                        "\\ud83d\\\\ude00",
                        "\\ud83d\\ud83d")) {
            assertThat(passes(f, "{\"k\":\"" + value + "\"}")).as(value).isFalse();
        }
        // Neither does a name holding one, and the record stays valid JSON: a later member counts.
        assertThat(passes(f, "{\"k\\ud800\":\"?\"}")).isFalse();
        assertThat(passes(f, "{\"k\":\"\\udfff\",\"k\":\"?\"}")).isTrue();
    }

    @Test
    void bytesOfEightyHexAndAboveAreComparedAsTheyAre() {
        RecordFilter f = RecordFilter.jsonFieldIn("k", "é");
        assertThat(f.matches(bytes("{\"k\":\"", 0xC3, 0xA9, "\"}"))).isTrue();
        // Not UTF-8, but passed over as they are in other members' strings and names.
        assertThat(f.matches(bytes("{\"", 0xFF, "\":\"", 0xC3, 0x28, "\",\"k\":\"é\"}"))).isTrue();
        assertThat(f.matches(bytes("{\"k\":\"", 0xE9, "\"}"))).isFalse(); // Latin-1 é
    }

    @Test
    void whatIsNotStrictJsonFails() {
        String ok = "\"event_type\":\"view\"";
        assertThat(passes(TYPES, "{" + ok + "}")).isTrue();
        List<String> bad =
                List.of(
                        "{" + ok + ",}",
                        "{," + ok + "}",
                        "{" + ok,
                        ok,
                        "[{" + ok + "}]",
                        "{" + ok + "}{}",
                        "{" + ok + "} x",
                        "{" + ok + "}\f",
                        "\f{" + ok + "}",
                        "\ufeff{" + ok + "}",
                        "{'event_type':'view'}",
                        "{event_type:\"view\"}",
                        "{" + ok + ",\"n\":01}",
                        "{" + ok + ",\"n\":-}",
                        "{" + ok + ",\"n\":1.}",
                        "{" + ok + ",\"n\":.5}",
                        "{" + ok + ",\"n\":1e}",
                        "{" + ok + ",\"n\":+1}",
                        "{" + ok + ",\"n\":0x1}",
                        "{" + ok + ",\"n\":NaN}",
                        "{" + ok + ",\"n\":Infinity}",
                        "{" + ok + ",\"n\":tru}",
                        "{" + ok + ",\"n\":True}",
                        "{" + ok + ",\"n\":nul}",
                        "{" + ok + ",\"n\":[1,]}",
                        "{" + ok + ",\"n\":[1 2]}",
                        "{" + ok + ",\"n\":{\"a\"}}",
                        "{" + ok + ",\"n\":{\"a\":1,}}",
                        "{" + ok + ",\"n\":[}",
                        "{" + ok + ",\"n\":{]}",
                        "{" + ok + ",\"n\":\"tab\there\"}",
                        "{" + ok + ",\"n\":\"\\x41\"}",
                        "{" + ok + ",\"n\":\"\\u12\"}",
                        "{" + ok + ",\"n\":\"\\u12g4\"}",
                        "{" + ok + ",\"n\":\"open}");
        for (String json : bad) {
            assertThat(passes(TYPES, json)).as(json).isFalse();
        }
        List<String> good =
                List.of(
                        "{" + ok + ",\"n\":[-0,0.5,1E+5,-1.25e-3,1e0,true,false,null,\"\",[],{}]}",
                        "{\"n\":{\"a\":[{\"b\":[[]]}]}," + ok + "}",
                        "{\"\":\"\"," + ok + ",\"\\u0000\":\"\\u001f\"}",
                        "{" + ok + ",\"del\":\"\u007f\"}");
        for (String json : good) {
            assertThat(passes(TYPES, json)).as(json).isTrue();
        }
    }

    @Test
    void nestingPastAThousandFails() {
        RecordFilter f = RecordFilter.jsonFieldIn("k", "v");
        assertThat(f.matches(arrays(1000))).isTrue();
        assertThat(f.matches(arrays(1001))).isFalse();
        assertThat(f.matches(mixed(1000, false))).isTrue();
        assertThat(f.matches(mixed(1001, false))).isFalse();
    }

    @Test
    void deepContainersAreClosedByTheirOwnBracketOnly() {
        // Past 64 levels the scanner keeps its stack elsewhere: the kinds must survive there too.
        RecordFilter f = RecordFilter.jsonFieldIn("k", "v");
        for (int depth : new int[] {2, 63, 64, 65, 66, 129, 130, 999}) {
            assertThat(f.matches(mixed(depth, false))).as("depth %s", depth).isTrue();
            assertThat(f.matches(mixed(depth, true))).as("depth %s, wrong closer", depth).isFalse();
        }
    }

    /** {"k":"v","d":[[...1...]]} with its deepest value at nesting depth {@code depth}. */
    private static byte[] arrays(int depth) {
        String open = String.join("", Collections.nCopies(depth - 1, "["));
        String close = String.join("", Collections.nCopies(depth - 1, "]"));
        return utf8("{\"k\":\"v\",\"d\":" + open + "1" + close + "}");
    }

    /**
     * {"k":"v","d":[{"a":[[{"a":...1...}]]}]} with its deepest value at nesting depth {@code
     * depth}: the container at each level is an object or an array in the Thue-Morse order, which
     * no shift by a power of two repeats (so a stack that mixes up levels 32 or 64 apart closes one
     * with the wrong bracket); with {@code wrongCloser} the innermost one is closed by the other
     * kind's bracket.
     */
    private static byte[] mixed(int depth, boolean wrongCloser) {
        StringBuilder s = new StringBuilder("{\"k\":\"v\",\"d\":");
        StringBuilder closers = new StringBuilder();
        for (int level = 2; level <= depth; level++) {
            boolean object = Integer.bitCount(level) % 2 == 1;
            s.append(object ? "{\"a\":" : "[");
            boolean wrong = wrongCloser && level == depth;
            closers.insert(0, object != wrong ? '}' : ']');
        }
        return utf8(s.append('1').append(closers).append('}').toString());
    }

    @Test
    void bytesContainFindsTheNeedleAnywhere() {
        RecordFilter f = RecordFilter.bytesContain(new byte[] {0, (byte) 0xFF});
        assertThat(f.matches(new byte[] {0, (byte) 0xFF})).isTrue();
        assertThat(f.matches(new byte[] {1, 0, 0, (byte) 0xFF, 2})).isTrue();
        assertThat(f.matches(new byte[] {0, 1, (byte) 0xFF})).isFalse();
        assertThat(f.matches(new byte[] {0})).isFalse();
        assertThat(f.matches(new byte[0])).isFalse();
        assertThat(f.matches(new byte[] {9, 0, (byte) 0xFF, 9}, 0, 2)).isFalse();
        assertThat(f.matches(new byte[] {9, 0, (byte) 0xFF, 9}, 1, 2)).isTrue();
        assertThat(RecordFilter.none().matches(new byte[0])).isTrue();
        assertThat(RecordFilter.none().matches(utf8("not json"))).isTrue();
    }

    @Test
    void aRecordOutsideItsBufferIsRefused() {
        byte[] buf = utf8("{\"event_type\":\"view\"}");
        assertThatThrownBy(() -> TYPES.matches(buf, 1, buf.length))
                .isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> TYPES.matches(buf, -1, 2))
                .isInstanceOf(IndexOutOfBoundsException.class);
    }

    @Test
    void refusesFiltersOutsideTheProtocolsBounds() {
        assertThatThrownBy(() -> RecordFilter.jsonFieldIn("", "v"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("field");
        // Bounds count UTF-8 bytes: 'é' is two.
        RecordFilter.jsonFieldIn("é".repeat(32767) + "x", "v");
        assertThatThrownBy(() -> RecordFilter.jsonFieldIn("é".repeat(32768), "v"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("field")
                .hasMessageContaining("65535");
        RecordFilter.jsonFieldIn("f", "", "é".repeat(32767) + "x");
        assertThatThrownBy(() -> RecordFilter.jsonFieldIn("f", "ok", "é".repeat(32768)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("value")
                .hasMessageContaining("65535");
        assertThatThrownBy(() -> RecordFilter.jsonFieldIn("f", List.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1 to 4096 values");
        assertThat(RecordFilter.jsonFieldIn("f", Collections.nCopies(4096, "v")).values())
                .hasSize(4096);
        assertThatThrownBy(() -> RecordFilter.jsonFieldIn("f", Collections.nCopies(4097, "v")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("got 4097");
        assertThatThrownBy(() -> RecordFilter.bytesContain(new byte[0]))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("needle");
        assertThatThrownBy(() -> RecordFilter.bytesContain(new byte[65537]))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("needle");
        assertThat(RecordFilter.bytesContain(new byte[65536]).needle()).hasSize(65536);
        // Not UTF-8 at all: the wire and the comparison need well-formed strings.
        assertThatThrownBy(() -> RecordFilter.jsonFieldIn("f\ud83d", "v"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unpaired surrogate");
        assertThatThrownBy(() -> RecordFilter.jsonFieldIn("f", "v", "\ude00\ud83d"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unpaired surrogate");
        assertThat(RecordFilter.jsonFieldIn("\ud83d\ude00", "\ud83d\ude00").field())
                .isEqualTo("😀");
        assertThatThrownBy(() -> RecordFilter.jsonFieldIn(null, "v"))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> RecordFilter.jsonFieldIn("f", "v", null))
                .isInstanceOf(NullPointerException.class);
    }

    @Test
    void valueObjectsWithCopiesOfWhatTheyAreGiven() {
        byte[] needle = {1, 2};
        RecordFilter f = RecordFilter.bytesContain(needle);
        needle[0] = 9;
        f.needle()[1] = 9;
        assertThat(f.needle()).containsExactly(1, 2);
        List<String> values = new ArrayList<>(List.of("a", "b"));
        RecordFilter g = RecordFilter.jsonFieldIn("f", values);
        values.add("c");
        assertThat(g.values()).containsExactly("a", "b");

        assertThat(RecordFilter.jsonFieldIn("f", "a", "b"))
                .isEqualTo(g)
                .hasSameHashCodeAs(g)
                .isNotEqualTo(RecordFilter.jsonFieldIn("f", "b", "a"))
                .isNotEqualTo(RecordFilter.jsonFieldIn("g", "a", "b"));
        assertThat(RecordFilter.bytesContain(new byte[] {1, 2})).isEqualTo(f).hasSameHashCodeAs(f);
        assertThat(f).isNotEqualTo(RecordFilter.none()).isNotEqualTo(g);
        assertThat(g.toString()).contains("json_field_in", "f", "a", "b");
        assertThat(f.toString()).contains("bytes_contain");
        assertThat(RecordFilter.none().toString()).isEqualTo("none");
        assertThat(RecordFilter.none().passesAll()).isTrue();
        assertThat(g.passesAll()).isFalse();
    }

    @Test
    void survivesJavaSerializationAsFlinkShipsIt() throws Exception {
        for (RecordFilter f :
                List.of(
                        TYPES,
                        RecordFilter.bytesContain(new byte[] {'"', 'v'}),
                        RecordFilter.none())) {
            RecordFilter copy = roundTrip(f);
            assertThat(copy).isEqualTo(f);
            assertThat(copy.matches(utf8("{\"event_type\":\"view\"}"))).isTrue();
            assertThat(copy.matches(utf8("{\"event_type\":\"other\"}"))).isEqualTo(f.passesAll());
        }
        assertThat(roundTrip(RecordFilter.none())).isSameAs(RecordFilter.none());
    }

    private static RecordFilter roundTrip(RecordFilter f) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(f);
        }
        try (ObjectInputStream in =
                new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            return (RecordFilter) in.readObject();
        }
    }

    @Test
    void matchingAllocatesNothingPerRecord() {
        java.lang.management.ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        assumeTrue(threads instanceof com.sun.management.ThreadMXBean);
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) threads;
        assumeTrue(mx.isThreadAllocatedMemorySupported() && mx.isThreadAllocatedMemoryEnabled());
        // A YSB-like event with a nested member and escapes in names and values, one that passes
        // and one that fails.
        byte[][] records = {
            utf8(
                    "{\"user_id\":\"3f1c5a1e-aaaa-bbbb-cccc-1234567890ab\",\"ad\":{\"id\":[1,2.5e3,"
                            + "null,{\"t\":true}]},\"ev\\u0065nt_type\":\"v\\u0069ew\",\"ip\":"
                            + "\"1.2.3.4\"}"),
            utf8("{\"event_type\":\"purchase\",\"n\":-0.5,\"e\":\"\\ud83d\\ude00\"}")
        };
        int passed = 0;
        for (int i = 0; i < 2_000; i++) { // links the methods' call sites first
            passed += TYPES.matches(records[i & 1]) ? 1 : 0;
        }
        long before = mx.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < 20_000; i++) {
            passed += TYPES.matches(records[i & 1]) ? 1 : 0;
        }
        long allocated = mx.getCurrentThreadAllocatedBytes() - before;
        assertThat(passed).isEqualTo(11_000);
        // A few hundred bytes at most, whatever compiles meanwhile; a byte per record is 20 000.
        assertThat(allocated).as("bytes allocated by 20 000 matches").isLessThan(2_000);
    }

    /** Bytes from strings (as UTF-8) and ints (as single bytes), in order. */
    private static byte[] bytes(Object... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (Object p : parts) {
            if (p instanceof String s) {
                out.writeBytes(utf8(s));
            } else {
                out.write((Integer) p);
            }
        }
        return out.toByteArray();
    }
}
