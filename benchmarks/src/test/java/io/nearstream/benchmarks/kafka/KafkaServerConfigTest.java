package io.nearstream.benchmarks.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The {@code server.properties} {@link KafkaBroker} writes. */
class KafkaServerConfigTest {

    @Test
    void oneNodeKraftOnLoopbackWithTheGivenPorts() {
        Map<String, String> p =
                KafkaServerConfig.properties(9092, 9093, Path.of("/tmp/k/data"), Map.of());
        assertThat(p)
                .containsEntry("process.roles", "broker,controller")
                .containsEntry("controller.quorum.voters", "1@127.0.0.1:9093")
                .containsEntry(
                        "listeners", "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093")
                .containsEntry("advertised.listeners", "PLAINTEXT://127.0.0.1:9092")
                .containsEntry("log.dirs", "/tmp/k/data")
                .containsEntry("offsets.topic.replication.factor", "1");
    }

    @Test
    void overridesReplaceDefaultsAndAddSettings() {
        Map<String, String> p =
                KafkaServerConfig.properties(
                        1,
                        2,
                        Path.of("/d"),
                        Map.of("num.io.threads", "1", "auto.create.topics.enable", "true"));
        assertThat(p)
                .containsEntry("num.io.threads", "1")
                .containsEntry("auto.create.topics.enable", "true");
        assertThat(KafkaServerConfig.render(p))
                .contains("num.io.threads=1\n")
                .contains("auto.create.topics.enable=true\n")
                .doesNotContain("auto.create.topics.enable=false");
    }
}
