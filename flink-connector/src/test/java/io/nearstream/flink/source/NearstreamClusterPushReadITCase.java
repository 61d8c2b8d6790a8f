package io.nearstream.flink.source;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import io.nearstream.flink.source.testutils.ClusterReads;
import io.nearstream.testing.NearstreamClusterExtension;
import java.util.List;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * PUSH over a broker cluster whose three brokers all run on the readers' host ({@code localhost}),
 * end to end (docs/flink-connector.md, "Over a broker cluster"): a bounded job of two readers reads
 * every record exactly once, and each broker pushed its own streamlets through exactly one push
 * subscription for the job (one per host and broker) and served no fetch.
 */
class NearstreamClusterPushReadITCase {

    @RegisterExtension
    static final NearstreamClusterExtension CLUSTER =
            new NearstreamClusterExtension(List.of("localhost", "localhost", "localhost"));

    @RegisterExtension
    static final MiniClusterExtension FLINK =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    @Test
    void eachLocalBrokerPushesItsOwnStreamletsThroughOneSubscription() throws Exception {
        ClusterReads.Filled stream = ClusterReads.fill(CLUSTER, "push", 6, 2_000);
        long[] fetchedBefore = new long[3];
        for (int b = 0; b < 3; b++) {
            fetchedBefore[b] = ClusterReads.stat(CLUSTER, b, "nearstream_fetch_records_total");
        }

        List<String> read =
                ClusterReads.readAll(
                        NearstreamSource.<String>builder()
                                .setBrokers(CLUSTER.bootstrap())
                                .setStream("push")
                                .setReadMode(ReadMode.PUSH)
                                .setPushSlots(4, 64 * 1024)
                                .setDeserializer(NearstreamRecordDeserializationSchema.utf8())
                                .setBounded(NearstreamStoppingPositions.latest())
                                .build(),
                        2);

        assertThat(read).containsExactlyInAnyOrderElementsOf(stream.records());
        for (int b = 0; b < 3; b++) {
            int id = CLUSTER.brokerId(b);
            long theirs = stream.recordsOf(id, 2_000);
            assertThat(theirs).as("broker %d stores streamlets", id).isPositive();
            assertThat(ClusterReads.stat(CLUSTER, b, "nearstream_push_subscribe_requests_total"))
                    .as("push subscribes of broker %d", id)
                    .isEqualTo(1);
            assertThat(ClusterReads.stat(CLUSTER, b, "nearstream_push_records_total"))
                    .as("records pushed by broker %d", id)
                    .isGreaterThanOrEqualTo(theirs);
            assertThat(
                            ClusterReads.stat(CLUSTER, b, "nearstream_fetch_records_total")
                                    - fetchedBefore[b])
                    .as("records fetched from broker %d", id)
                    .isZero();
        }
    }
}
