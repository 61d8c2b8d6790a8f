package io.nearstream.testing;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A Nearstream cluster in a JUnit test: one ZooKeeper ({@link ZooKeeperExtension}) and N real
 * brokers ({@link NearstreamBrokerExtension}), broker {@code i} (0-based) started with {@code
 * --zookeeper 127.0.0.1:ZKPORT/nearstream --broker-id i+1 --host HOST_i} after ZooKeeper answers.
 *
 * <pre>{@code
 * class MyITCase {
 *     @RegisterExtension
 *     static final NearstreamClusterExtension CLUSTER =
 *             new NearstreamClusterExtension(3, true); // host-a, host-b, host-c
 *
 *     @Test
 *     void survivesABroker() {
 *         CLUSTER.kill(1);
 *         ... NettyNearstreamClient.connect(CLUSTER.bootstrap()) ...
 *         CLUSTER.restart(1);
 *     }
 * }
 * }</pre>
 *
 * <p>By default every broker reports the same host name, {@value #DEFAULT_HOST} (one machine, as
 * the processes really are: push locality applies between all of them); {@code distinctHosts} names
 * them {@code host-a}, {@code host-b}, ..., or the caller lists one name per broker. The lifecycle
 * is that of {@link NearstreamBrokerExtension}: a static field is one cluster per test class, an
 * instance field one per test; harnesses call {@link #start()} and {@link #close()} directly.
 */
public final class NearstreamClusterExtension
        implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback, AfterEachCallback {

    /** The host name every broker reports unless told otherwise. */
    public static final String DEFAULT_HOST = "host-a";

    /** The ZooKeeper chroot the brokers register under. */
    public static final String CHROOT = "/nearstream";

    private final List<String> hostNames;
    private final List<String> extraArgs;
    private ZooKeeperExtension zookeeper;
    private List<NearstreamBrokerExtension> brokers = List.of();
    private boolean startedPerTest;

    /** {@code brokers} brokers, all on host {@value #DEFAULT_HOST}. */
    public NearstreamClusterExtension(int brokers) {
        this(brokers, false);
    }

    /**
     * {@code brokers} brokers, each on a host of its own ({@link #hostName(int)}: host-a, host-b,
     * ...) if {@code distinctHosts}, else all on {@value #DEFAULT_HOST}.
     */
    public NearstreamClusterExtension(int brokers, boolean distinctHosts) {
        this(hostNames(brokers, distinctHosts), List.of());
    }

    /** One broker per entry of {@code hostNames}, broker {@code i} reporting host {@code i}. */
    public NearstreamClusterExtension(List<String> hostNames) {
        this(hostNames, List.of());
    }

    /** As {@link #NearstreamClusterExtension(List)}, with more flags for every broker. */
    public NearstreamClusterExtension(List<String> hostNames, List<String> extraArgs) {
        if (hostNames.isEmpty()) {
            throw new IllegalArgumentException("a cluster needs at least one broker");
        }
        this.hostNames = List.copyOf(hostNames);
        this.extraArgs = List.copyOf(extraArgs);
    }

    /** The host name of broker {@code i} in a cluster with distinct hosts: host-a, host-b, ... */
    public static String hostName(int i) {
        return i < 26 ? "host-" + (char) ('a' + i) : "host-" + (i + 1);
    }

    private static List<String> hostNames(int brokers, boolean distinctHosts) {
        if (brokers < 1) {
            throw new IllegalArgumentException(
                    "a cluster needs at least one broker, got " + brokers);
        }
        List<String> names = new ArrayList<>();
        for (int i = 0; i < brokers; i++) {
            names.add(distinctHosts ? hostName(i) : DEFAULT_HOST);
        }
        return names;
    }

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        start();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        close();
    }

    @Override
    public void beforeEach(ExtensionContext context) throws Exception {
        if (zookeeper == null) {
            startedPerTest = true;
            start();
        }
    }

    @Override
    public void afterEach(ExtensionContext context) {
        if (startedPerTest) {
            startedPerTest = false;
            close();
        }
    }

    /** The ZooKeeper the brokers register in. */
    public synchronized ZooKeeperExtension zookeeper() {
        if (zookeeper == null) {
            throw new IllegalStateException("the cluster has not been started");
        }
        return zookeeper;
    }

    /** What the brokers got as {@code --zookeeper}: {@code 127.0.0.1:PORT/nearstream}. */
    public String zookeeperConnect() {
        return zookeeper().connectString() + CHROOT;
    }

    /** The number of brokers. */
    public int size() {
        return hostNames.size();
    }

    /** Broker {@code i} (0-based; its {@code --broker-id} is {@code i + 1}). */
    public synchronized NearstreamBrokerExtension broker(int i) {
        if (brokers.isEmpty()) {
            throw new IllegalStateException("the cluster has not been started");
        }
        return brokers.get(i);
    }

    /** Every broker, in broker-id order. */
    public synchronized List<NearstreamBrokerExtension> brokers() {
        if (brokers.isEmpty()) {
            throw new IllegalStateException("the cluster has not been started");
        }
        return brokers;
    }

    /** The broker id of broker {@code i}. */
    public int brokerId(int i) {
        return i + 1;
    }

    /** The host name broker {@code i} reports ({@code --host}). */
    public String host(int i) {
        return hostNames.get(i);
    }

    /** {@code 127.0.0.1:p1,127.0.0.1:p2,...}, every broker's address in broker-id order. */
    public String bootstrap() {
        return brokers().stream()
                .map(NearstreamBrokerExtension::address)
                .collect(Collectors.joining(","));
    }

    /** Kills broker {@code i} with SIGKILL; {@link #restart(int)} brings it back. */
    public void kill(int i) {
        broker(i).stop();
    }

    /** Kills broker {@code i} and starts it again on the same port, data directory and flags. */
    public void restart(int i) {
        broker(i).restart();
    }

    /** Starts ZooKeeper, then the brokers in broker-id order; for harnesses. */
    public synchronized void start() throws IOException {
        if (zookeeper != null) {
            return; // already running
        }
        zookeeper = new ZooKeeperExtension();
        List<NearstreamBrokerExtension> started = new ArrayList<>();
        brokers = Collections.unmodifiableList(started);
        try {
            zookeeper.start();
            String connect = zookeeperConnect();
            for (int i = 0; i < hostNames.size(); i++) {
                List<String> args = new ArrayList<>();
                args.add("--zookeeper");
                args.add(connect);
                args.add("--broker-id");
                args.add(Integer.toString(brokerId(i)));
                args.add("--host");
                args.add(hostNames.get(i));
                args.addAll(extraArgs);
                NearstreamBrokerExtension broker = new NearstreamBrokerExtension(args);
                started.add(broker);
                broker.start();
            }
        } catch (IOException | RuntimeException e) {
            close();
            throw e;
        }
    }

    /** Stops the brokers, then ZooKeeper, and removes their files; idempotent. */
    public synchronized void close() {
        RuntimeException failure = null;
        for (int i = brokers.size() - 1; i >= 0; i--) {
            try {
                brokers.get(i).close();
            } catch (RuntimeException e) {
                failure = addFailure(failure, e);
            }
        }
        brokers = List.of();
        if (zookeeper != null) {
            try {
                zookeeper.close();
            } catch (RuntimeException e) {
                failure = addFailure(failure, e);
            } finally {
                zookeeper = null;
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    private static RuntimeException addFailure(RuntimeException first, RuntimeException next) {
        if (first == null) {
            return next;
        }
        first.addSuppressed(next);
        return first;
    }
}
