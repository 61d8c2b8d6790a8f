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
 * Flink's own sink test suite ({@code flink-connector-test-utils}) against the real broker, under
 * exactly-once (broker transactions) and at-least-once: a basic job, a restart from a savepoint
 * with the same, a higher and a lower parallelism, and the writer's metrics.
 */
class NearstreamSinkTestSuiteITCase extends SinkTestSuiteBase<String> {

    @TestSemantics
    CheckpointingMode[] semantics = {
        CheckpointingMode.EXACTLY_ONCE, CheckpointingMode.AT_LEAST_ONCE
    };

    @TestEnv MiniClusterTestEnvironment flink = new MiniClusterTestEnvironment();

    @TestExternalSystem NearstreamExternalSystem broker = new NearstreamExternalSystem();

    @TestContext
    ExternalContextFactory<NearstreamSinkExternalContext> streams =
            testName -> new NearstreamSinkExternalContext(broker, testName);
}
