package io.nearstream.benchmarks.jobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class FlagsTest {

    private static final Set<String> KNOWN = Set.of("mode", "records", "parallelism");

    @Test
    void readsNameValuePairsInBothSpellings() {
        Flags f =
                new Flags(
                        new String[] {"--mode", "push", "--records=1_000", "--parallelism", "1,2"},
                        KNOWN);

        assertThat(f.required("mode")).isEqualTo("push");
        assertThat(f.positiveLong("records", 5)).isEqualTo(1_000);
        assertThat(f.positiveInts("parallelism", List.of())).containsExactly(1, 2);
        assertThat(f.has("workload")).isFalse();
    }

    @Test
    void rejectsWhatItDoesNotKnow() {
        assertThatThrownBy(() -> new Flags(new String[] {"--modes", "push"}, KNOWN))
                .hasMessageContaining("unknown flag --modes");
        assertThatThrownBy(() -> new Flags(new String[] {"push"}, KNOWN))
                .hasMessageContaining("unexpected argument 'push'");
        assertThatThrownBy(() -> new Flags(new String[] {"--mode"}, KNOWN))
                .hasMessageContaining("--mode needs a value");
    }

    @Test
    void checksValues() {
        Flags f = new Flags(new String[] {"--records", "-3", "--parallelism", "1,x"}, KNOWN);

        assertThatThrownBy(() -> f.positiveLong("records", 1)).hasMessageContaining("> 0");
        assertThatThrownBy(() -> f.positiveInts("parallelism", List.of()))
                .hasMessageContaining("positive numbers");
        assertThatThrownBy(() -> f.required("mode")).hasMessageContaining("--mode is required");
        assertThatThrownBy(() -> SourceMode.parse("pulsar"))
                .hasMessageContaining("unknown mode 'pulsar'");
        assertThat(SourceMode.parse("KAFKA")).isEqualTo(SourceMode.KAFKA);
        assertThatThrownBy(() -> Workload.named("grep"))
                .hasMessageContaining("unknown workload 'grep'");
    }
}
