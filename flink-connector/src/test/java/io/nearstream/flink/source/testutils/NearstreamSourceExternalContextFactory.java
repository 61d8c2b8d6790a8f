package io.nearstream.flink.source.testutils;

import io.nearstream.flink.source.ReadMode;
import org.apache.flink.connector.testframe.external.ExternalContextFactory;

/** Creates a {@link NearstreamSourceExternalContext} (a fresh stream) per test case. */
public final class NearstreamSourceExternalContextFactory
        implements ExternalContextFactory<NearstreamSourceExternalContext> {

    private final NearstreamExternalSystem system;
    private final ReadMode readMode;

    public NearstreamSourceExternalContextFactory(NearstreamExternalSystem system) {
        this(system, ReadMode.PULL);
    }

    public NearstreamSourceExternalContextFactory(
            NearstreamExternalSystem system, ReadMode readMode) {
        this.system = system;
        this.readMode = readMode;
    }

    @Override
    public NearstreamSourceExternalContext createExternalContext(String testName) {
        return new NearstreamSourceExternalContext(system, testName, readMode);
    }
}
