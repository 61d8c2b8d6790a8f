package io.nearstream.benchmarks.workloads;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The text records of an output stream: their format, and reading them back. */
class ResultRecordsTest {

    @Test
    void wordCountRecordsAreWordTabCount() {
        assertThat(ResultRecords.wordCount("hamlet", 7)).isEqualTo("hamlet\t7");
        assertThat(ResultRecords.wordWindowCount(new WordWindowCount("ghost", 1_005_000, 2)))
                .isEqualTo("ghost\t2\t1005000");
    }

    @Test
    void aWordsTotalIsItsLargestRunningCountWhateverTheOrderAndRepeats() {
        List<String> records =
                List.of("a\t1", "b\t1", "a\t2", "a\t3", "a\t2", "b\t1", "c\t1", "a\t3");
        assertThat(ResultRecords.wordTotals(records)).isEqualTo(Map.of("a", 3L, "b", 1L, "c", 1L));
    }

    @Test
    void anotherRecordIsRefusedNamingIt() {
        for (String bad : List.of("a 1", "\t1", "a\tx", "a\t1\t5")) {
            assertThatThrownBy(() -> ResultRecords.wordTotals(List.of(bad)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(bad);
        }
    }

    @Test
    void ysbRecordsAreTheCsvRowsOfTheSinkFiles() {
        CampaignWindowCount w = new CampaignWindowCount("c-1", 1_000_000, 42, 999_500, 1_000_250);
        String row = w.toCsv();
        assertThat(row).isEqualTo("c-1,1000000,42,999500,1000250,250");
        assertThat(YsbSummary.CSV_HEADER.split(",")).hasSameSizeAs(row.split(","));
        assertThat(CampaignWindowCount.parseCsv(row)).isEqualTo(w);
        assertThat(CampaignWindowCount.parseCsv("c-1,1000000,42,999500,1000250")).isEqualTo(w);
        for (String bad : List.of("c-1,1000000,42", ",1,2,3,4", "c,1,2,3,x", "c,1,2,3,4,5,6")) {
            assertThatThrownBy(() -> CampaignWindowCount.parseCsv(bad))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("not a YSB window row");
        }
    }
}
