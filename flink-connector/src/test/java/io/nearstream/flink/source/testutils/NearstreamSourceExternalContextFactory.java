package io.nearstream.flink.source.testutils;

import org.apache.flink.connector.testframe.external.ExternalContextFactory;

/** Creates a {@link NearstreamSourceExternalContext} (a fresh stream) per test case. */
public final class NearstreamSourceExternalContextFactory
        implements ExternalContextFactory<NearstreamSourceExternalContext> {

    private final NearstreamExternalSystem system;

    public NearstreamSourceExternalContextFactory(NearstreamExternalSystem system) {
        this.system = system;
    }

    @Override
    public NearstreamSourceExternalContext createExternalContext(String testName) {
        return new NearstreamSourceExternalContext(system, testName);
    }
}
