package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link RecordFilter} against testdata/record-filters/cases.tsv, whose expectations an independent
 * implementation decided (Python's json module, testdata/record-filters/generate.py). The broker's
 * push thread is checked against the same file, so a job gets the same records whether the broker
 * or the reader filters.
 */
class RecordFilterCasesTest {

    private static final HexFormat HEX = HexFormat.of();

    /** One line of the file: its number (1-based) for the report, and its columns. */
    private record Case(int line, boolean pass, String spec, byte[] record, String note) {
        String describe() {
            return "line " + line + " (" + note + "): expected " + (pass ? "pass" : "fail");
        }
    }

    static Path casesFile() {
        String dir = System.getProperty("nearstream.testdata.dir", "../testdata");
        return Paths.get(dir, "record-filters", "cases.tsv");
    }

    private static List<Case> cases() throws IOException {
        List<String> lines = Files.readAllLines(casesFile(), StandardCharsets.US_ASCII);
        List<Case> out = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] cols = line.split("\t", -1);
            assertThat(cols).as("line %d: expect, filter, record, note", i + 1).hasSize(4);
            assertThat(cols[0]).as("line %d", i + 1).isIn("pass", "fail");
            out.add(
                    new Case(
                            i + 1,
                            cols[0].equals("pass"),
                            cols[1],
                            HEX.parseHex(cols[2]),
                            cols[3]));
        }
        return out;
    }

    /** The file's filter column, read here independently of {@link RecordFilter#parseSpec}. */
    private static RecordFilter filterOf(String spec) {
        String[] parts = spec.split(":", -1);
        if (parts[0].equals("bytes_contain")) {
            assertThat(parts).hasSize(2);
            return RecordFilter.bytesContain(HEX.parseHex(parts[1]));
        }
        assertThat(parts).hasSize(3);
        assertThat(parts[0]).isEqualTo("json_field_in");
        List<String> values = new ArrayList<>();
        // One empty value is nothing after the second colon: split keeps it.
        for (String v : parts[2].split(",", -1)) {
            values.add(new String(HEX.parseHex(v), StandardCharsets.UTF_8));
        }
        return RecordFilter.jsonFieldIn(
                new String(HEX.parseHex(parts[1]), StandardCharsets.UTF_8), values);
    }

    @Test
    void everyCaseIsDecidedAsTheIndependentImplementationDecidedIt() throws IOException {
        List<Case> cases = cases();
        List<String> wrong = new ArrayList<>();
        int passing = 0;
        for (Case c : cases) {
            RecordFilter f = filterOf(c.spec());
            passing += c.pass() ? 1 : 0;
            // The record alone: a read past its end throws.
            if (f.matches(c.record()) != c.pass()) {
                wrong.add(c.describe());
                continue;
            }
            // Inside a larger buffer, as a fetched chunk holds it, between bytes that would change
            // the answer if read: the end of a string, whitespace, the end of an object. The
            // offsets move the record across the eight-byte steps of the string scan.
            check:
            for (byte pad : new byte[] {'"', ' ', '}'}) {
                for (int off = 1; off < 9; off++) {
                    byte[] framed = new byte[off + c.record().length + 9];
                    Arrays.fill(framed, pad);
                    System.arraycopy(c.record(), 0, framed, off, c.record().length);
                    if (f.matches(framed, off, c.record().length) != c.pass()) {
                        wrong.add(
                                c.describe()
                                        + " at buffer offset "
                                        + off
                                        + " between "
                                        + (char) pad);
                        break check;
                    }
                }
            }
        }
        assertThat(wrong).as("cases decided otherwise").isEmpty();
        // The file is the one generate.py writes, not a truncated one.
        assertThat(cases.size()).isGreaterThan(2000);
        assertThat(passing).isGreaterThan(200);
        assertThat(cases.size() - passing).isGreaterThan(1000);
    }

    @Test
    void theFilesFiltersSurviveTheSpecFormAFlinkOptionCarries() throws IOException {
        for (Case c : cases()) {
            RecordFilter f = filterOf(c.spec());
            assertThat(RecordFilter.parseSpec(c.spec())).as(c.describe()).isEqualTo(f);
            assertThat(RecordFilter.parseSpec(f.toSpec())).as(c.describe()).isEqualTo(f);
        }
    }
}
