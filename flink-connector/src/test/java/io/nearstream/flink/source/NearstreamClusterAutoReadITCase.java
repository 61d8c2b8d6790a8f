package io.nearstream.flink.source;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.StreamConfig;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import io.nearstream.flink.source.testutils.NearstreamTestData;
import io.nearstream.testing.NearstreamClusterExtension;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * AUTO over a broker cluster, end to end (docs/flink-connector.md, "Over a broker cluster"): broker
 * 1 runs on the readers' host ({@code localhost}), brokers 2 and 3 report other hosts. A bounded
 * job reads every record exactly once; the local broker's streamlets came through its push rings
 * alone (it pushed all their records and served no fetch), the other brokers' through fetches alone
 * (no push subscription reached them).
 */
class NearstreamClusterAutoReadITCase {

    @RegisterExtension
    static final NearstreamClusterExtension CLUSTER =
            new NearstreamClusterExtension(List.of("localhost", "remote-2", "remote-3"));

    @RegisterExtension
    static final MiniClusterExtension FLINK =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    private static long stat(int broker, String name) throws Exception {
        return CLUSTER.broker(broker)
                .client()
                .stats()
                .get(30, TimeUnit.SECONDS)
                .getOrDefault(name, 0L);
    }

    @Test
    void readersPushTheLocalBrokersStreamletsAndPullTheOthers() throws Exception {
        int streamlets = 6;
        List<String> expected = new ArrayList<>();
        List<Integer> owners;
        try (NearstreamClient cluster = NearstreamClient.connect(CLUSTER.bootstrap())) {
            cluster.createStream(StreamConfig.of("auto", streamlets)).get(10, TimeUnit.SECONDS);
            owners =
                    cluster.clusterMetadata("auto")
                            .get(10, TimeUnit.SECONDS)
                            .placement("auto")
                            .orElseThrow()
                            .owners();
            for (int s = 0; s < streamlets; s++) {
                List<String> records = new ArrayList<>();
                for (int i = 0; i < 2_000; i++) {
                    records.add(s + "-" + i);
                }
                NearstreamTestData.append(cluster, "auto", s, records, 97, 1_000);
                expected.addAll(records);
            }
        }
        long localRecords = 2_000L * owners.stream().filter(o -> o == 1).count();
        long[] fetchedBefore = new long[3];
        for (int b = 0; b < 3; b++) {
            fetchedBefore[b] = stat(b, "nearstream_fetch_records_total");
        }

        NearstreamSource<String> source =
                NearstreamSource.<String>builder()
                        .setBrokers(CLUSTER.bootstrap())
                        .setStream("auto")
                        .setReadMode(ReadMode.AUTO)
                        .setPushSlots(4, 64 * 1024)
                        .setDeserializer(NearstreamRecordDeserializationSchema.utf8())
                        .setFetchMaxWaitMs(100)
                        .setBounded(NearstreamStoppingPositions.latest())
                        .build();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        List<String> read = new ArrayList<>();
        try (CloseableIterator<String> it =
                env.fromSource(source, WatermarkStrategy.noWatermarks(), "auto")
                        .executeAndCollect()) {
            it.forEachRemaining(read::add);
        }

        assertThat(read).containsExactlyInAnyOrderElementsOf(expected);
        // Broker 1 (local): its streamlets by push only, one subscription for the host.
        assertThat(stat(0, "nearstream_push_subscribe_requests_total")).isEqualTo(1);
        assertThat(stat(0, "nearstream_push_records_total")).isGreaterThanOrEqualTo(localRecords);
        assertThat(stat(0, "nearstream_fetch_records_total") - fetchedBefore[0]).isZero();
        // Brokers 2 and 3 (remote): by fetch only.
        for (int b = 1; b < 3; b++) {
            long theirs = 2_000L * countOwnedBy(owners, b + 1);
            assertThat(stat(b, "nearstream_push_subscribe_requests_total")).isZero();
            assertThat(stat(b, "nearstream_fetch_records_total") - fetchedBefore[b])
                    .isGreaterThanOrEqualTo(theirs);
        }
    }

    private static long countOwnedBy(List<Integer> owners, int broker) {
        return owners.stream().filter(o -> o == broker).count();
    }
}
