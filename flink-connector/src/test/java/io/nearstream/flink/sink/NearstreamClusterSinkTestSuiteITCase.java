package io.nearstream.flink.sink;

import io.nearstream.flink.sink.testutils.NearstreamSinkExternalContext;
import io.nearstream.flink.source.testutils.NearstreamExternalSystem;
import org.apache.flink.connector.testframe.environment.MiniClusterTestEnvironment;
import org.apache.flink.connector.testframe.external.ExternalContextFactory;
import org.apache.flink.connector.testframe.junit.annotations.TestContext;
import org.apache.flink.connector.testframe.junit.annotations.TestEnv;
import org.apache.flink.connector.testframe.junit.annotations.TestExternalSystem;
import org.apache.flink.connector.testframe.junit.annotations.TestSemantics;
import org.apache.flink.connector.testframe.testsuites.SinkTestSuiteBase;
import org.apache.flink.core.execution.CheckpointingMode;

/**
 * Flink's own sink test suite writing at-least-once to a stream spread over three brokers and
 * ZooKeeper (docs/cluster.md): each record goes to the broker of its streamlet. Exactly-once over a
 * cluster needs transactions across brokers, which this version refuses at build time.
 */
class NearstreamClusterSinkTestSuiteITCase extends SinkTestSuiteBase<String> {

    @TestSemantics CheckpointingMode[] semantics = {CheckpointingMode.AT_LEAST_ONCE};

    @TestEnv MiniClusterTestEnvironment flink = new MiniClusterTestEnvironment();

    @TestExternalSystem NearstreamExternalSystem brokers = NearstreamExternalSystem.cluster(3);

    @TestContext
    ExternalContextFactory<NearstreamSinkExternalContext> streams =
            testName -> new NearstreamSinkExternalContext(brokers, testName);
}
