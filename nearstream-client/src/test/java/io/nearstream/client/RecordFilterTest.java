package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link RecordFilter} against testdata/record-filters/cases.tsv, whose expectations an independent
 * implementation decided (Python's json module, testdata/record-filters/generate.py); the broker's
 * push thread is checked against the same file, so both sides keep the same records.
 */
class RecordFilterTest {

    static Path casesFile() {
        String dir = System.getProperty("nearstream.testdata.dir", "../testdata");
        return Paths.get(dir, "record-filters", "cases.tsv");
    }

    static RecordFilter fromSpec(String spec) {
        String[] parts = spec.split(":", -1);
        HexFormat hex = HexFormat.of();
        if (parts[0].equals("bytes_contain")) {
            return RecordFilter.bytesContain(hex.parseHex(parts[1]));
        }
        assertThat(parts[0]).isEqualTo("json_field_in");
        List<String> values = new ArrayList<>();
        for (String v : parts[2].split(",", -1)) {
            values.add(new String(hex.parseHex(v), StandardCharsets.UTF_8));
        }
        return RecordFilter.jsonFieldIn(
                new String(hex.parseHex(parts[1]), StandardCharsets.UTF_8), values);
    }

    @Test
    void agreesWithTheIndependentCases() throws IOException {
        int cases = 0;
        int passing = 0;
        List<String> wrong = new ArrayList<>();
        for (String line : Files.readAllLines(casesFile(), StandardCharsets.US_ASCII)) {
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] cols = line.split("\t", -1);
            boolean expect = cols[0].equals("pass");
            byte[] record = HexFormat.of().parseHex(cols[2]);
            // Inside a larger buffer, as a fetched chunk holds it.
            byte[] framed = new byte[record.length + 7];
            Arrays.fill(framed, (byte) '"');
            System.arraycopy(record, 0, framed, 3, record.length);
            boolean got = fromSpec(cols[1]).matches(framed, 3, record.length);
            cases++;
            passing += expect ? 1 : 0;
            if (got != expect) {
                wrong.add(cols[0] + " expected for " + cols[1] + " on " + cols[cols.length - 1]);
            }
        }
        assertThat(wrong).as("cases decided otherwise").isEmpty();
        assertThat(cases).isGreaterThan(2000);
        assertThat(passing).isGreaterThan(200);
    }

    @Test
    void findsTheTopLevelMemberOnly() {
        RecordFilter f = RecordFilter.jsonFieldIn("event_type", "view", "click");
        assertThat(f.matches(utf8("{\"ad\":\"1\",\"event_type\":\"view\",\"n\":[1,{}]}"))).isTrue();
        assertThat(f.matches(utf8("{\"event_type\":\"cl\\u0069ck\"}"))).isTrue();
        assertThat(f.matches(utf8("{\"a\":{\"event_type\":\"view\"}}"))).isFalse();
        // A repeated name passes when any of its values does.
        assertThat(f.matches(utf8("{\"event_type\":\"view\",\"event_type\":\"x\"}"))).isTrue();
        assertThat(f.matches(utf8("{\"event_type\":\"x\",\"event_type\":\"view\"}"))).isTrue();
        assertThat(f.matches(utf8("{\"event_type\":\"x\",\"event_type\":\"y\"}"))).isFalse();
        assertThat(f.matches(utf8("{\"event_type\":\"view\",}"))).isFalse();
        assertThat(f.matches(utf8("{\"event_type\":\"\\ud83d\"}"))).isFalse();
        assertThat(f.matches(utf8("{\"event_type\":5}"))).isFalse();
    }

    @Test
    void nestingPastAThousandFails() {
        RecordFilter f = RecordFilter.jsonFieldIn("k", "v");
        assertThat(f.matches(nested(1000))).isTrue();
        assertThat(f.matches(nested(1001))).isFalse();
    }

    /** {"k":"v","d":[[...1...]]} with its deepest value at nesting depth {@code depth}. */
    private static byte[] nested(int depth) {
        String open = String.join("", Collections.nCopies(depth - 1, "["));
        String close = String.join("", Collections.nCopies(depth - 1, "]"));
        return utf8("{\"k\":\"v\",\"d\":" + open + "1" + close + "}");
    }

    @Test
    void bytesContainFindsTheNeedleAnywhere() {
        RecordFilter f = RecordFilter.bytesContain(new byte[] {0, (byte) 0xFF});
        assertThat(f.matches(new byte[] {0, (byte) 0xFF})).isTrue();
        assertThat(f.matches(new byte[] {1, 0, 0, (byte) 0xFF, 2})).isTrue();
        assertThat(f.matches(new byte[] {0, 1, (byte) 0xFF})).isFalse();
        assertThat(f.matches(new byte[] {9, 0, (byte) 0xFF, 9}, 0, 2)).isFalse();
        assertThat(RecordFilter.none().matches(new byte[0])).isTrue();
    }

    @Test
    void refusesFiltersOutsideTheProtocolsBounds() {
        assertThatThrownBy(() -> RecordFilter.jsonFieldIn("", "v"))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> RecordFilter.jsonFieldIn("f", List.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1 to 4096 values");
        assertThatThrownBy(() -> RecordFilter.jsonFieldIn("f", Collections.nCopies(4097, "v")))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> RecordFilter.bytesContain(new byte[0]))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> RecordFilter.bytesContain(new byte[65537]))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(RecordFilter.bytesContain(new byte[65536]).needle()).hasSize(65536);
    }

    @Test
    void survivesJavaSerializationAsFlinkShipsIt() throws Exception {
        RecordFilter f = RecordFilter.jsonFieldIn("event_type", "view");
        assertThat(f.matches(utf8("{\"event_type\":\"view\"}"))).isTrue(); // makes its matcher
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(f);
        }
        RecordFilter copy;
        try (ObjectInputStream in =
                new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            copy = (RecordFilter) in.readObject();
        }
        assertThat(copy).isEqualTo(f);
        assertThat(copy.matches(utf8("{\"event_type\":\"view\"}"))).isTrue();
        assertThat(copy.matches(utf8("{\"event_type\":\"click\"}"))).isFalse();
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
