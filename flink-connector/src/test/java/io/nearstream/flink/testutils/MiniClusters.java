package io.nearstream.flink.testutils;

import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.test.junit5.MiniClusterExtension;

/** The Flink cluster of the connector's ITCases: one TaskManager in the test JVM. */
public final class MiniClusters {

    private MiniClusters() {}

    /** One TaskManager with {@code slots} slots, for {@code @RegisterExtension static} fields. */
    public static MiniClusterExtension oneTaskManager(int slots) {
        return new MiniClusterExtension(
                new MiniClusterResourceConfiguration.Builder()
                        .setNumberTaskManagers(1)
                        .setNumberSlotsPerTaskManager(slots)
                        .build());
    }
}
