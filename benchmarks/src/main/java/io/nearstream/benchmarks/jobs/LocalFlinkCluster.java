package io.nearstream.benchmarks.jobs;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;

/**
 * A Flink MiniCluster in this JVM (one TaskManager, bound to 127.0.0.1) that several benchmark jobs
 * are submitted to one after the other, so its start-up is paid once and stays out of every job's
 * figures.
 */
public final class LocalFlinkCluster implements AutoCloseable {

    private final MiniCluster cluster;

    private LocalFlinkCluster(MiniCluster cluster) {
        this.cluster = cluster;
    }

    /** Starts a cluster with {@code slots} task slots. */
    public static LocalFlinkCluster start(int slots) throws Exception {
        return start(slots, new Configuration());
    }

    /** Starts a cluster with {@code slots} task slots and {@code extra} settings. */
    public static LocalFlinkCluster start(int slots, Configuration extra) throws Exception {
        Configuration config = new Configuration(extra);
        config.set(RestOptions.BIND_ADDRESS, "127.0.0.1");
        config.set(RestOptions.ADDRESS, "127.0.0.1");
        config.set(RestOptions.BIND_PORT, "0");
        MiniCluster cluster =
                new MiniCluster(
                        new MiniClusterConfiguration.Builder()
                                .setConfiguration(config)
                                .setNumTaskManagers(1)
                                .setNumSlotsPerTaskManager(slots)
                                .setCommonBindAddress("127.0.0.1")
                                .build());
        cluster.start();
        return new LocalFlinkCluster(cluster);
    }

    /** The MiniCluster, for what this class does not wrap (submitting, cancelling, statistics). */
    public MiniCluster cluster() {
        return cluster;
    }

    @Override
    public void close() throws Exception {
        cluster.close();
    }
}
