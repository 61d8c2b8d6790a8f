package io.nearstream.benchmarks.kafka;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/**
 * Waiting for a topic that was just created: {@code createTopics} completes when the controller has
 * it, but the broker's metadata may not have it yet, so a {@code describeTopics} right after can
 * answer "unknown topic" and a partition can lack a leader for a moment.
 */
final class KafkaTopics {

    private KafkaTopics() {}

    /** The topic's description once the broker knows it and every partition has a leader. */
    static TopicDescription awaitReady(Admin admin, String topic, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        Exception last = null;
        while (true) {
            try {
                TopicDescription d =
                        admin.describeTopics(List.of(topic))
                                .allTopicNames()
                                .get(timeout.toMillis(), TimeUnit.MILLISECONDS)
                                .get(topic);
                List<TopicPartitionInfo> partitions = d.partitions();
                if (!partitions.isEmpty()
                        && partitions.stream().allMatch(p -> p.leader() != null)) {
                    return d;
                }
                last = new IllegalStateException("partitions without a leader: " + partitions);
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
                    throw new IllegalStateException(
                            "cannot describe topic " + topic + ": " + e.getCause(), e);
                }
                last = e;
            } catch (TimeoutException e) {
                last = e;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted waiting for topic " + topic, e);
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(
                        "topic " + topic + " not ready within " + timeout + ": " + last, last);
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted waiting for topic " + topic, e);
            }
        }
    }
}
