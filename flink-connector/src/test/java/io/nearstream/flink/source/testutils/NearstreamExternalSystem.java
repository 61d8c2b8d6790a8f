package io.nearstream.flink.source.testutils;

import io.nearstream.client.NearstreamClient;
import io.nearstream.testing.NearstreamBrokerExtension;
import org.apache.flink.connector.testframe.TestResource;

/**
 * The real broker as an external system of Flink's connector test framework: started once per test
 * class by the framework, stopped after it.
 */
public final class NearstreamExternalSystem implements TestResource {

    private final NearstreamBrokerExtension broker = new NearstreamBrokerExtension();
    private boolean started;

    @Override
    public synchronized void startUp() throws Exception {
        if (!started) {
            broker.start();
            started = true;
        }
    }

    @Override
    public synchronized void tearDown() {
        if (started) {
            started = false;
            broker.close();
        }
    }

    public String address() {
        return broker.address();
    }

    public NearstreamClient client() {
        return broker.client();
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
        return "nearstreamd";
    }
}
