package io.nearstream.flinkcluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RunningCountsTest {

    private static final Map<String, Long> TOTALS = Map.of("a", 2L, "b", 1L);

    @Test
    void exactOutputInAnyOrderPasses() {
        assertThat(RunningCounts.expectedSize(TOTALS)).isEqualTo(3);
        assertThat(RunningCounts.differences(TOTALS, List.of("b\t1", "a\t2", "a\t1"))).isEmpty();
    }

    @Test
    void lossDuplicatesAndWrongCountsAreReported() {
        assertThat(RunningCounts.differences(TOTALS, List.of("a\t1", "a\t2")))
                .contains("1 missing [b=1]", "0 unexpected");
        assertThat(RunningCounts.differences(TOTALS, List.of("a\t1", "a\t2", "b\t1", "a\t2")))
                .contains("0 missing", "1 unexpected (duplicates or wrong counts) [a=2]");
        assertThat(RunningCounts.differences(TOTALS, List.of("a\t1", "a\t2", "b\t1", "a\t3")))
                .contains("1 unexpected (duplicates or wrong counts) [a=3]");
    }
}
