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
 * Flink's own source test suite ({@code flink-connector-test-utils}) against the real broker, in
 * pull mode, under exactly-once and at-least-once: single and multiple splits, savepoint restart
 * with the same, higher and lower parallelism, metrics, an idle reader, TaskManager failover.
 */
class NearstreamSourceTestSuiteITCase extends SourceTestSuiteBase<String> {

    @TestSemantics
    CheckpointingMode[] semantics = {
        CheckpointingMode.EXACTLY_ONCE, CheckpointingMode.AT_LEAST_ONCE
    };

    @TestEnv MiniClusterTestEnvironment flink = new MiniClusterTestEnvironment();

    @TestExternalSystem NearstreamExternalSystem broker = new NearstreamExternalSystem();

    @TestContext
    NearstreamSourceExternalContextFactory streams =
            new NearstreamSourceExternalContextFactory(broker);
}
