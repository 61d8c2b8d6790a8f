package io.nearstream.flink.source.testutils;

import io.nearstream.client.NearstreamClient;
import io.nearstream.testing.NearstreamBrokerExtension;
import io.nearstream.testing.NearstreamClusterExtension;
import java.util.List;
import javax.annotation.Nullable;
import org.apache.flink.connector.testframe.TestResource;

/**
 * The real broker as an external system of Flink's connector test framework: started once per test
 * class by the framework, stopped after it. {@link #cluster(int)} is a cluster instead: ZooKeeper
 * and that many brokers (docs/cluster.md), reached through their bootstrap list.
 */
public final class NearstreamExternalSystem implements TestResource {

    @Nullable private final NearstreamBrokerExtension broker;
    @Nullable private final NearstreamClusterExtension cluster;
    @Nullable private NearstreamClient clusterClient;
    private boolean started;

    /** One standalone broker. */
    public NearstreamExternalSystem() {
        this.broker = new NearstreamBrokerExtension();
        this.cluster = null;
    }

    private NearstreamExternalSystem(NearstreamClusterExtension cluster) {
        this.broker = null;
        this.cluster = cluster;
    }

    /** ZooKeeper and {@code brokers} brokers; streams created through it spread over them. */
    public static NearstreamExternalSystem cluster(int brokers) {
        return new NearstreamExternalSystem(new NearstreamClusterExtension(brokers));
    }

    /**
     * ZooKeeper and one broker per entry of {@code hosts}, each reporting that host name: a broker
     * on {@code "localhost"} is on every reader's host, one on an unknown name on none.
     */
    public static NearstreamExternalSystem cluster(List<String> hosts) {
        return new NearstreamExternalSystem(new NearstreamClusterExtension(hosts));
    }

    @Override
    public synchronized void startUp() throws Exception {
        if (!started) {
            if (cluster != null) {
                cluster.start();
            } else {
                broker.start();
            }
            started = true;
        }
    }

    @Override
    public synchronized void tearDown() {
        if (started) {
            started = false;
            if (clusterClient != null) {
                clusterClient.close();
                clusterClient = null;
            }
            if (cluster != null) {
                cluster.close();
            } else {
                broker.close();
            }
        }
    }

    /** The broker's address, or the cluster's bootstrap list. */
    public String address() {
        return cluster != null ? cluster.bootstrap() : broker.address();
    }

    /** A client of the broker, or of the whole cluster (routing per streamlet). */
    public synchronized NearstreamClient client() {
        if (cluster == null) {
            return broker.client();
        }
        if (clusterClient == null) {
            clusterClient = NearstreamClient.connect(cluster.bootstrap());
        }
        return clusterClient;
    }

    /**
     * A stream name of its own for one test case: {@code <kind>-<the test's name, letters and
     * digits only>-<random hex>}, so cases and repeated runs never share a stream.
     */
    public static String streamName(String kind, String testName) {
        return kind
                + "-"
                + testName.replaceAll("[^A-Za-z0-9]", "").toLowerCase()
                + "-"
                + Long.toHexString(java.util.concurrent.ThreadLocalRandom.current().nextLong());
    }

    @Override
    public String toString() {
        return cluster != null ? "nearstreamd x" + cluster.size() + " + ZooKeeper" : "nearstreamd";
    }
}
