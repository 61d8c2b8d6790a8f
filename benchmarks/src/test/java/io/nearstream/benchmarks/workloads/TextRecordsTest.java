package io.nearstream.benchmarks.workloads;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import org.junit.jupiter.api.Test;

class TextRecordsTest {

    private static List<String> split(String text, int target) {
        return TextRecords.split(text.getBytes(StandardCharsets.UTF_8), target).stream()
                .map(b -> new String(b, StandardCharsets.UTF_8))
                .toList();
    }

    @Test
    void cutsAfterTheLastWhitespaceThatFits() {
        assertThat(split("to be or not to be", 8)).containsExactly("to be ", "or not ", "to be");
        assertThat(split("a\nb c\td", 4)).containsExactly("a\nb ", "c\td");
    }

    @Test
    void aWordLongerThanTheTargetMakesOneLongerRecord() {
        assertThat(split("ab honorificabilitudinitatibus cd", 6))
                .containsExactly("ab ", "honorificabilitudinitatibus ", "cd");
        assertThat(split("honorificabilitudinitatibus", 4))
                .containsExactly("honorificabilitudinitatibus");
    }

    @Test
    void piecesGiveTheTextBackAndSplitNoWord() throws Exception {
        byte[] text = Files.readAllBytes(ReferenceWordCount.hamletOpening());
        for (int target : new int[] {1, 7, 100, 2048, 1 << 20}) {
            List<byte[]> records = TextRecords.split(text, target);
            ByteArrayOutputStream joined = new ByteArrayOutputStream();
            for (int i = 0; i < records.size(); i++) {
                byte[] r = records.get(i);
                joined.writeBytes(r);
                assertThat(r).isNotEmpty();
                if (i < records.size() - 1) {
                    assertThat(TextRecords.isWhitespace(r[r.length - 1]))
                            .as("record %s of target %s ends at whitespace", i, target)
                            .isTrue();
                }
                if (target >= 100) {
                    assertThat(r.length).isLessThanOrEqualTo(target);
                }
            }
            assertThat(joined.toByteArray()).isEqualTo(text);
        }
    }

    @Test
    void rejectsANonPositiveSize() {
        assertThatThrownBy(() -> TextRecords.split(new byte[1], 0))
                .hasMessageContaining("record size must be >= 1");
    }
}
