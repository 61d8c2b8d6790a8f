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
 * Flink's own sink test suite writing to a stream spread over three brokers and ZooKeeper
 * (docs/cluster.md), each record going to the broker of its streamlet: exactly-once (one broker
 * transaction per broker and checkpoint, committed in two phases) and at-least-once, through
 * restarts from savepoints with the same, a higher and a lower parallelism.
 */
class NearstreamClusterSinkTestSuiteITCase extends SinkTestSuiteBase<String> {

    @TestSemantics
    CheckpointingMode[] semantics = {
        CheckpointingMode.EXACTLY_ONCE, CheckpointingMode.AT_LEAST_ONCE
    };

    @TestEnv MiniClusterTestEnvironment flink = new MiniClusterTestEnvironment();

    @TestExternalSystem NearstreamExternalSystem brokers = NearstreamExternalSystem.cluster(3);

    @TestContext
    ExternalContextFactory<NearstreamSinkExternalContext> streams =
            testName -> new NearstreamSinkExternalContext(brokers, testName);
}
