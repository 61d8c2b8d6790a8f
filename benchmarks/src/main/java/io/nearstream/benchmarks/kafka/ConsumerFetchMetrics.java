package io.nearstream.benchmarks.kafka;

import java.lang.management.ManagementFactory;
import java.util.Set;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/**
 * A Kafka consumer's fetch totals, read from the metrics it publishes over JMX (kafka-clients
 * registers a JMX reporter by default) while it is open: the split reader keeps its consumer to
 * itself, and these are the numbers the consumer keeps anyway.
 *
 * @param fetchRequests Fetch RPCs the consumer sent ({@code fetch-total})
 * @param bytes bytes of the fetched records ({@code bytes-consumed-total})
 */
record ConsumerFetchMetrics(long fetchRequests, long bytes) {

    private static final String DOMAIN_AND_TYPE =
            "kafka.consumer:type=consumer-fetch-manager-metrics,client-id=";

    /** The totals of the one open consumer whose {@code client.id} starts with the prefix. */
    static ConsumerFetchMetrics ofClientIdPrefix(String clientIdPrefix) {
        // Kafka quotes a client id in its MBean name only when it holds special characters.
        if (!clientIdPrefix.matches("[A-Za-z0-9._-]+")) {
            throw new IllegalArgumentException(
                    "client.id prefix must be letters, digits, '.', '_' or '-': " + clientIdPrefix);
        }
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        try {
            Set<ObjectName> names =
                    server.queryNames(new ObjectName(DOMAIN_AND_TYPE + clientIdPrefix + "*"), null);
            if (names.size() != 1) {
                throw new IllegalStateException(
                        "expected the metrics of one consumer with client.id "
                                + clientIdPrefix
                                + "*, found "
                                + names);
            }
            ObjectName name = names.iterator().next();
            return new ConsumerFetchMetrics(
                    Math.round((Double) server.getAttribute(name, "fetch-total")),
                    Math.round((Double) server.getAttribute(name, "bytes-consumed-total")));
        } catch (JMException e) {
            throw new IllegalStateException("cannot read the consumer's fetch metrics", e);
        }
    }
}
