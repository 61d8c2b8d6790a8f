package io.nearstream.flink.source;

import io.nearstream.flink.source.testutils.NearstreamExternalSystem;
import io.nearstream.flink.source.testutils.NearstreamSourceExternalContextFactory;
import org.apache.flink.connector.testframe.environment.MiniClusterTestEnvironment;
import org.apache.flink.connector.testframe.junit.annotations.TestContext;
import org.apache.flink.connector.testframe.junit.annotations.TestEnv;
import org.apache.flink.connector.testframe.junit.annotations.TestExternalSystem;
import org.apache.flink.connector.testframe.junit.annotations.TestSemantics;
import org.apache.flink.connector.testframe.testsuites.SourceTestSuiteBase;
import org.apache.flink.core.execution.CheckpointingMode;

/**
 * Flink's own source test suite against a stream spread over three brokers and ZooKeeper
 * (docs/cluster.md), read through the cluster's bootstrap list in pull mode: every streamlet is
 * fetched from the broker that stores it, through restarts, rescaling and failover.
 */
class NearstreamClusterSourceTestSuiteITCase extends SourceTestSuiteBase<String> {

    @TestSemantics CheckpointingMode[] semantics = {CheckpointingMode.EXACTLY_ONCE};

    @TestEnv MiniClusterTestEnvironment flink = new MiniClusterTestEnvironment();

    @TestExternalSystem NearstreamExternalSystem brokers = NearstreamExternalSystem.cluster(3);

    @TestContext
    NearstreamSourceExternalContextFactory streams =
            new NearstreamSourceExternalContextFactory(brokers);
}
