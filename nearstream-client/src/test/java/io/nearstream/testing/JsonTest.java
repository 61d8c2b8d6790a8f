package io.nearstream.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonTest {

    @Test
    void readsWhatFlinksRestApiAnswers() {
        Map<String, Object> overview =
                Json.object(
                        "{\"taskmanagers\":2,\"slots-total\":4,\"flink-version\":\"2.2.1\","
                                + "\"ok\":true,\"none\":null,\"ratio\":-1.5e2}");
        assertThat(overview)
                .containsEntry("taskmanagers", BigInteger.valueOf(2))
                .containsEntry("flink-version", "2.2.1")
                .containsEntry("ok", true)
                .containsEntry("none", null)
                .containsEntry("ratio", new BigDecimal("-1.5e2"));

        List<Object> metrics =
                Json.array(
                        " [ {\"id\":\"Status.JVM.Threads.Count\",\"value\":\"57\"},"
                                + "{\"id\":\"a\\\"b\\\\c\\u00e9\\n\",\"value\":[]} ] ");
        assertThat(metrics)
                .containsExactly(
                        Map.of("id", "Status.JVM.Threads.Count", "value", "57"),
                        Map.of("id", "a\"b\\c\u00e9\n", "value", List.of()));
    }

    @Test
    void refusesWhatIsNotOneValue() {
        for (String bad : Arrays.asList("", "{", "{\"a\":1", "[1,]", "{\"a\":1} x", "tru")) {
            assertThatThrownBy(() -> Json.parse(bad)).as(bad).isInstanceOf(RuntimeException.class);
        }
    }
}
