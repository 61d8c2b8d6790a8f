package io.nearstream.flink.sink.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Which ids belong to a sink, which a current writer uses, and who takes over the rest. */
class TransactionalIdsTest {

    @Test
    void idsNameParallelismAndSubtask() {
        assertThat(TransactionalIds.of("job", 4, 3)).isEqualTo("job-4-3");
        assertThat(TransactionalIds.longest("p")).isEqualTo("p-32768-32767");
    }

    @Test
    void onlyThePrefixsOwnIdsBelongToIt() {
        assertThat(TransactionalIds.isOfPrefix("job-4-3", "job")).isTrue();
        assertThat(TransactionalIds.isOfPrefix("job-x-4-3", "job"))
                .as("another job whose prefix starts the same")
                .isFalse();
        assertThat(TransactionalIds.isOfPrefix("job-4", "job")).isFalse();
        assertThat(TransactionalIds.isOfPrefix("job-4-3-1", "job")).isFalse();
        assertThat(TransactionalIds.isOfPrefix("jobs-4-3", "job")).isFalse();
    }

    @Test
    void currentWritersUseTheIdsOfTheirParallelism() {
        assertThat(TransactionalIds.isUsedBy("job-4-3", "job", 4)).isTrue();
        assertThat(TransactionalIds.isUsedBy("job-4-3", "job", 2)).isFalse();
        assertThat(TransactionalIds.isUsedBy("job-2-2", "job", 2)).as("index too high").isFalse();
        assertThat(TransactionalIds.isUsedBy("job-x-2-0", "job", 2)).isFalse();
    }

    @Test
    void everyLeftoverIdHasExactlyOneResponsibleSubtask() {
        Map<Integer, Integer> perSubtask = new HashMap<>();
        for (int i = 0; i < 64; i++) {
            int s = TransactionalIds.responsibleSubtask(TransactionalIds.of("old", 64, i), 3);
            assertThat(s).isBetween(0, 2);
            perSubtask.merge(s, 1, Integer::sum);
        }
        assertThat(perSubtask.values().stream().mapToInt(Integer::intValue).sum()).isEqualTo(64);
        assertThat(TransactionalIds.responsibleSubtask("\u0000", 5))
                .isEqualTo(Math.floorMod("\u0000".hashCode(), 5));
    }
}
