package io.nearstream.benchmarks.kafka;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The {@code server.properties} of a one-node Kafka in KRaft mode: one process that is both broker
 * and controller, listening on 127.0.0.1 only, with every replication factor at 1 so the internal
 * topics can be created on a single node. Storage settings stay at Kafka's defaults (no forced
 * flush: the page cache absorbs writes), as a stock installation runs.
 */
final class KafkaServerConfig {

    static final int NODE_ID = 1;

    private KafkaServerConfig() {}

    /**
     * The properties, in file order; {@code overrides} replace or add entries (for example {@code
     * num.io.threads} to constrain the broker as {@code nearstreamd --workers} does).
     */
    static Map<String, String> properties(
            int brokerPort, int controllerPort, Path dataDir, Map<String, String> overrides) {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("process.roles", "broker,controller");
        p.put("node.id", Integer.toString(NODE_ID));
        p.put("controller.quorum.voters", NODE_ID + "@127.0.0.1:" + controllerPort);
        p.put(
                "listeners",
                "PLAINTEXT://127.0.0.1:"
                        + brokerPort
                        + ",CONTROLLER://127.0.0.1:"
                        + controllerPort);
        p.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + brokerPort);
        p.put("controller.listener.names", "CONTROLLER");
        p.put("inter.broker.listener.name", "PLAINTEXT");
        p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        p.put("log.dirs", dataDir.toAbsolutePath().toString());
        p.put("offsets.topic.replication.factor", "1");
        p.put("transaction.state.log.replication.factor", "1");
        p.put("transaction.state.log.min.isr", "1");
        p.put("share.coordinator.state.topic.replication.factor", "1");
        p.put("share.coordinator.state.topic.min.isr", "1");
        // Benchmarks create their topics with the partition count they measure.
        p.put("auto.create.topics.enable", "false");
        // A single consumer group member need not wait for others to join.
        p.put("group.initial.rebalance.delay.ms", "0");
        p.putAll(overrides);
        return p;
    }

    /** {@code key=value} lines. */
    static String render(Map<String, String> properties) {
        StringBuilder b = new StringBuilder();
        properties.forEach((k, v) -> b.append(k).append('=').append(v).append('\n'));
        return b.toString();
    }
}
