package io.nearstream.flink.source;

import io.nearstream.flink.source.testutils.NearstreamExternalSystem;
import io.nearstream.flink.source.testutils.NearstreamSourceExternalContextFactory;
import java.util.List;
import org.apache.flink.connector.testframe.environment.MiniClusterTestEnvironment;
import org.apache.flink.connector.testframe.junit.annotations.TestContext;
import org.apache.flink.connector.testframe.junit.annotations.TestEnv;
import org.apache.flink.connector.testframe.junit.annotations.TestExternalSystem;
import org.apache.flink.connector.testframe.junit.annotations.TestSemantics;
import org.apache.flink.connector.testframe.testsuites.SourceTestSuiteBase;
import org.apache.flink.core.execution.CheckpointingMode;

/**
 * Flink's own source test suite in AUTO mode against three brokers and ZooKeeper, one broker on the
 * readers' host ({@code localhost}) and two on other hosts: every reader pushes the streamlets of
 * the local broker through one push subscription per host and pulls the others, through restarts,
 * rescaling and failover (docs/flink-connector.md, "Over a broker cluster").
 */
class NearstreamClusterAutoTestSuiteITCase extends SourceTestSuiteBase<String> {

    @TestSemantics CheckpointingMode[] semantics = {CheckpointingMode.EXACTLY_ONCE};

    @TestEnv MiniClusterTestEnvironment flink = new MiniClusterTestEnvironment();

    @TestExternalSystem
    NearstreamExternalSystem brokers =
            NearstreamExternalSystem.cluster(List.of("localhost", "remote-2", "remote-3"));

    @TestContext
    NearstreamSourceExternalContextFactory streams =
            new NearstreamSourceExternalContextFactory(brokers, ReadMode.AUTO);
}
