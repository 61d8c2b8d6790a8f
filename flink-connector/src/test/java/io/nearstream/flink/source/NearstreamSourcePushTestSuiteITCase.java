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
 * Flink's source test suite as {@link NearstreamSourceTestSuiteITCase}, in push mode: the readers
 * of each job share one push subscription of the real broker (shared memory rings).
 */
class NearstreamSourcePushTestSuiteITCase extends SourceTestSuiteBase<String> {

    @TestSemantics
    CheckpointingMode[] semantics = {
        CheckpointingMode.EXACTLY_ONCE, CheckpointingMode.AT_LEAST_ONCE
    };

    @TestEnv MiniClusterTestEnvironment flink = new MiniClusterTestEnvironment();

    @TestExternalSystem NearstreamExternalSystem broker = new NearstreamExternalSystem();

    @TestContext
    NearstreamSourceExternalContextFactory streams =
            new NearstreamSourceExternalContextFactory(broker, ReadMode.PUSH);
}
