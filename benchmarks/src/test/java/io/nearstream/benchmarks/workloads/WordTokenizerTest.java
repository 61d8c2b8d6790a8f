package io.nearstream.benchmarks.workloads;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class WordTokenizerTest {

    private static List<String> words(String text) {
        List<String> out = new ArrayList<>();
        WordTokenizer.forEachWord(text.getBytes(StandardCharsets.UTF_8), out::add);
        return out;
    }

    @Test
    void lowercasesRunsOfAsciiLettersAndDigits() {
        assertThat(words("To be, or NOT to be: that is the Question.\n"))
                .containsExactly(
                        "to", "be", "or", "not", "to", "be", "that", "is", "the", "question");
        assertThat(words("Act 3, Scene 1 -- 2B or not 2b"))
                .containsExactly("act", "3", "scene", "1", "2b", "or", "not", "2b");
    }

    @Test
    void apostrophesUnderscoresAndNonAsciiSeparate() {
        assertThat(words("don't o'er _italic_")).containsExactly("don", "t", "o", "er", "italic");
        // é is two UTF-8 bytes >= 0x80: a separator, as for the reference script.
        assertThat(words("café naïve Straße")).containsExactly("caf", "na", "ve", "stra", "e");
    }

    @Test
    void emptyAndSeparatorOnlyRecordsHaveNoWords() {
        assertThat(words("")).isEmpty();
        assertThat(words(" \n\t,.;!?'\"-")).isEmpty();
    }
}
