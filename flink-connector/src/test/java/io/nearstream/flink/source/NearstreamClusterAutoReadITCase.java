package io.nearstream.flink.source;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.StreamConfig;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import io.nearstream.flink.source.testutils.ClusterReads;
import io.nearstream.testing.NearstreamClusterExtension;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.util.RestartStrategyUtils;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.ExceptionUtils;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * AUTO over a broker cluster, end to end (docs/flink-connector.md, "Over a broker cluster"): broker
 * 1 runs on the readers' host ({@code localhost}), brokers 2 and 3 report other hosts. A bounded
 * job reads every record exactly once; the local broker's streamlets came through its push rings
 * alone (it pushed all their records and served no fetch), the other brokers' through fetches alone
 * (no push subscription reached them). PUSH over the same layout fails its reader, saying that a
 * remote broker's streamlet cannot be pushed.
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
        return ClusterReads.stat(CLUSTER, broker, name);
    }

    @Test
    void readersPushTheLocalBrokersStreamletsAndPullTheOthers() throws Exception {
        ClusterReads.Filled stream = ClusterReads.fill(CLUSTER, "auto", 6, 2_000);
        // Before, as the other test of this class may have subscribed already.
        long[] fetchedBefore = new long[3];
        long[] subscribesBefore = new long[3];
        for (int b = 0; b < 3; b++) {
            fetchedBefore[b] = stat(b, "nearstream_fetch_records_total");
            subscribesBefore[b] = stat(b, "nearstream_push_subscribe_requests_total");
        }

        List<String> read =
                ClusterReads.readAll(
                        NearstreamSource.<String>builder()
                                .setBrokers(CLUSTER.bootstrap())
                                .setStream("auto")
                                .setReadMode(ReadMode.AUTO)
                                .setPushSlots(4, 64 * 1024)
                                .setDeserializer(NearstreamRecordDeserializationSchema.utf8())
                                .setFetchMaxWaitMs(100)
                                .setBounded(NearstreamStoppingPositions.latest())
                                .build(),
                        2);

        assertThat(read).containsExactlyInAnyOrderElementsOf(stream.records());
        // Broker 1 (local): its streamlets by push only, one subscription for the host.
        assertThat(stat(0, "nearstream_push_subscribe_requests_total") - subscribesBefore[0])
                .isEqualTo(1);
        assertThat(stat(0, "nearstream_push_records_total"))
                .isGreaterThanOrEqualTo(stream.recordsOf(1, 2_000));
        assertThat(stat(0, "nearstream_fetch_records_total") - fetchedBefore[0]).isZero();
        // Brokers 2 and 3 (remote): by fetch only.
        for (int b = 1; b < 3; b++) {
            assertThat(stat(b, "nearstream_push_subscribe_requests_total") - subscribesBefore[b])
                    .isZero();
            assertThat(stat(b, "nearstream_fetch_records_total") - fetchedBefore[b])
                    .isGreaterThanOrEqualTo(stream.recordsOf(b + 1, 2_000));
        }
    }

    @Test
    void pushFailsAReaderGivenTheStreamletOfABrokerOnAnotherHost() throws Exception {
        try (NearstreamClient cluster = NearstreamClient.connect(CLUSTER.bootstrap())) {
            cluster.createStream(StreamConfig.of("push-remote", 3)).get(10, TimeUnit.SECONDS);
        }
        NearstreamSource<String> source =
                NearstreamSource.<String>builder()
                        .setBrokers(CLUSTER.bootstrap())
                        .setStream("push-remote")
                        .setReadMode(ReadMode.PUSH)
                        .setDeserializer(NearstreamRecordDeserializationSchema.utf8())
                        .setBounded(NearstreamStoppingPositions.latest())
                        .build();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        RestartStrategyUtils.configureNoRestartStrategy(env);
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "push-remote")
                .sinkTo(new DiscardingSink<>());
        assertThatThrownBy(() -> env.execute("push over remote brokers"))
                .satisfies(
                        e ->
                                assertThat(ExceptionUtils.stringifyException(e))
                                        .contains("PUSH needs a reader on the host of every broker")
                                        .contains("does not run on this reader's host"));
    }
}
