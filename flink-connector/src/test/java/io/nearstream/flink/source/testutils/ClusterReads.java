package io.nearstream.flink.source.testutils;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.StreamConfig;
import io.nearstream.client.StreamPlacement;
import io.nearstream.flink.source.NearstreamSource;
import io.nearstream.testing.NearstreamClusterExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;

/**
 * What the read tests over a broker cluster share: a stream filled across the brokers, the brokers'
 * own counters, and a bounded job's records.
 */
public final class ClusterReads {

    private ClusterReads() {}

    /** A stream's placement (the broker id of each streamlet) and every record written to it. */
    public record Filled(List<Integer> owners, List<String> records) {

        /** The records of the streamlets of broker {@code id}. */
        public long recordsOf(int id, int perStreamlet) {
            return (long) perStreamlet * owners.stream().filter(o -> o == id).count();
        }
    }

    /** Creates {@code stream} over the cluster and writes {@code perStreamlet} records to each. */
    public static Filled fill(
            NearstreamClusterExtension cluster, String stream, int streamlets, int perStreamlet)
            throws Exception {
        return fill(cluster, StreamConfig.of(stream, streamlets), perStreamlet);
    }

    /**
     * Creates the stream {@code config} describes over the cluster and writes {@code perStreamlet}
     * records to each streamlet.
     */
    public static Filled fill(
            NearstreamClusterExtension cluster, StreamConfig config, int perStreamlet)
            throws Exception {
        String stream = config.name();
        int streamlets = config.streamlets();
        List<String> written = new ArrayList<>();
        try (NearstreamClient client = NearstreamClient.connect(cluster.bootstrap())) {
            client.createStream(config).get(10, TimeUnit.SECONDS);
            List<Integer> owners =
                    client.clusterMetadata(stream)
                            .get(10, TimeUnit.SECONDS)
                            .placement(stream)
                            .orElseThrow()
                            .owners();
            for (int s = 0; s < streamlets; s++) {
                List<String> records = new ArrayList<>();
                for (int i = 0; i < perStreamlet; i++) {
                    records.add(s + "-" + i);
                }
                NearstreamTestData.append(client, stream, s, records, 97, 1_000);
                written.addAll(records);
            }
            return new Filled(owners, written);
        }
    }

    /** Counter {@code name} of broker {@code i} (0 when it has none yet). */
    public static long stat(NearstreamClusterExtension cluster, int i, String name)
            throws Exception {
        return cluster.broker(i).client().stats().get(30, TimeUnit.SECONDS).getOrDefault(name, 0L);
    }

    /** Each counter of {@code names} on each broker of the cluster, [broker index][name]. */
    public static long[][] stats(NearstreamClusterExtension cluster, List<String> names)
            throws Exception {
        long[][] out = new long[cluster.size()][names.size()];
        for (int b = 0; b < cluster.size(); b++) {
            for (int n = 0; n < names.size(); n++) {
                out[b][n] = stat(cluster, b, names.get(n));
            }
        }
        return out;
    }

    /**
     * Waits until the cluster's view has broker {@code id} in the in-sync set of every streamlet of
     * {@code stream}, which is what a source with follower reads decides by.
     */
    public static void awaitInSyncEverywhere(
            NearstreamClusterExtension cluster, String stream, int id) throws Exception {
        AtomicReference<StreamPlacement> seen = new AtomicReference<>();
        try (NearstreamClient client = NearstreamClient.connect(cluster.bootstrap())) {
            Await.until(
                    "broker " + id + " in the in-sync set of every streamlet of " + stream,
                    Duration.ofSeconds(30),
                    () -> {
                        StreamPlacement p =
                                client.clusterMetadata(stream)
                                        .get(10, TimeUnit.SECONDS)
                                        .placement(stream)
                                        .orElseThrow();
                        seen.set(p);
                        return p.replicaSets().stream().allMatch(r -> r.isInSync(id));
                    },
                    () -> String.valueOf(seen.get()));
        }
    }

    /** Runs a bounded job of {@code source} with {@code parallelism} readers; what it read. */
    public static List<String> readAll(NearstreamSource<String> source, int parallelism)
            throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(parallelism);
        List<String> read = new ArrayList<>();
        try (CloseableIterator<String> it =
                env.fromSource(source, WatermarkStrategy.noWatermarks(), "cluster read")
                        .executeAndCollect()) {
            it.forEachRemaining(read::add);
        }
        return read;
    }
}
