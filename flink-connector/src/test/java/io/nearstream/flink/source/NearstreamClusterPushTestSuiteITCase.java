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
 * Flink's own source test suite in PUSH mode against three brokers and ZooKeeper, all three on the
 * readers' host ({@code localhost}): every reader pushes each broker's streamlets through that
 * broker's own push subscription (one per host, broker and job), through restarts, rescaling and
 * failover (docs/flink-connector.md, "Over a broker cluster").
 */
class NearstreamClusterPushTestSuiteITCase extends SourceTestSuiteBase<String> {

    @TestSemantics CheckpointingMode[] semantics = {CheckpointingMode.EXACTLY_ONCE};

    @TestEnv MiniClusterTestEnvironment flink = new MiniClusterTestEnvironment();

    @TestExternalSystem
    NearstreamExternalSystem brokers =
            NearstreamExternalSystem.cluster(List.of("localhost", "localhost", "localhost"));

    @TestContext
    NearstreamSourceExternalContextFactory streams =
            new NearstreamSourceExternalContextFactory(brokers, ReadMode.PUSH);
}
