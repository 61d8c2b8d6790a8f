package io.nearstream.benchmarks.kafka;

import org.apache.flink.api.connector.source.SourceEvent;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.metrics.groups.SourceReaderMetricGroup;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.util.UserCodeClassLoader;

/**
 * The context of a split reader run outside a Flink job, as the split-reader benchmarks run one:
 * subtask 0 of 1, metrics that go nowhere. Splits are assigned by the caller, so asking the
 * enumerator for one, or sending it an event, is a mistake.
 */
final class StandaloneReaderContext implements SourceReaderContext {

    private final SourceReaderMetricGroup metrics =
            UnregisteredMetricsGroup.createSourceReaderMetricGroup();

    @Override
    public SourceReaderMetricGroup metricGroup() {
        return metrics;
    }

    @Override
    public Configuration getConfiguration() {
        return new Configuration();
    }

    @Override
    public String getLocalHostName() {
        return "127.0.0.1";
    }

    @Override
    public int getIndexOfSubtask() {
        return 0;
    }

    @Override
    public int currentParallelism() {
        return 1;
    }

    @Override
    public void sendSplitRequest() {
        throw new UnsupportedOperationException("a stand-alone reader has no split enumerator");
    }

    @Override
    public void sendSourceEventToCoordinator(SourceEvent sourceEvent) {
        throw new UnsupportedOperationException("a stand-alone reader has no split enumerator");
    }

    @Override
    public UserCodeClassLoader getUserCodeClassLoader() {
        ClassLoader loader = StandaloneReaderContext.class.getClassLoader();
        return new UserCodeClassLoader() {
            @Override
            public ClassLoader asClassLoader() {
                return loader;
            }

            @Override
            public void registerReleaseHookIfAbsent(String name, Runnable hook) {
                // The loader is never released.
            }
        };
    }
}
