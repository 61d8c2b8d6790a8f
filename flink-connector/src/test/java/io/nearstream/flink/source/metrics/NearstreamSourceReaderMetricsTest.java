package io.nearstream.flink.source.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.Position;
import java.util.HashMap;
import java.util.Map;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.groups.SourceReaderMetricGroup;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.metrics.groups.InternalSourceReaderMetricGroup;
import org.junit.jupiter.api.Test;

/** The reader metrics: what is registered where, and the pending-data estimate. */
class NearstreamSourceReaderMetricsTest {

    /** Records every metric registered, by name (the nearstream group's prefixed). */
    private static final class RecordingGroup extends UnregisteredMetricsGroup {
        final Map<String, Metric> metrics;
        final String prefix;

        RecordingGroup(Map<String, Metric> metrics, String prefix) {
            this.metrics = metrics;
            this.prefix = prefix;
        }

        @Override
        public Counter counter(String name) {
            return counter(name, new org.apache.flink.metrics.SimpleCounter());
        }

        @Override
        public <C extends Counter> C counter(String name, C counter) {
            metrics.put(prefix + name, counter);
            return counter;
        }

        @Override
        public <T, G extends Gauge<T>> G gauge(String name, G gauge) {
            metrics.put(prefix + name, gauge);
            return gauge;
        }

        @Override
        public <H extends Histogram> H histogram(String name, H histogram) {
            metrics.put(prefix + name, histogram);
            return histogram;
        }

        @Override
        public org.apache.flink.metrics.MetricGroup addGroup(String name) {
            return new RecordingGroup(metrics, prefix + name + ".");
        }
    }

    @Test
    void registersTheStandardAndNearstreamMetrics() {
        Map<String, Metric> registered = new HashMap<>();
        SourceReaderMetricGroup group =
                InternalSourceReaderMetricGroup.mock(new RecordingGroup(registered, ""));

        NearstreamSourceReaderMetrics metrics = new NearstreamSourceReaderMetrics(group);
        metrics.setSegmentBytes(1000);
        metrics.fetchCompleted(500, 10);
        metrics.fetchCompleted(0, 0);
        metrics.updatePending("s-0", new Position(1, 1, 200), new Position(1, 2, 300));
        metrics.updateFetchEventTimeLag(42);

        assertThat(registered)
                .containsKeys(
                        "pendingBytes",
                        "pendingRecords",
                        "currentFetchEventTimeLag",
                        "nearstream.fetchRequests",
                        "nearstream.emptyFetches",
                        "nearstream.fetchErrors",
                        "nearstream.bytesPerFetch");
        assertThat(metrics.numBytesIn()).isEqualTo(500);
        assertThat(((Counter) registered.get("nearstream.fetchRequests")).getCount()).isEqualTo(2);
        assertThat(((Counter) registered.get("nearstream.emptyFetches")).getCount()).isEqualTo(1);
        assertThat(((Histogram) registered.get("nearstream.bytesPerFetch")).getCount())
                .isEqualTo(2);
        // 800 left in segment 1 + 300 in segment 2; 50 bytes per record.
        assertThat(((Gauge<?>) registered.get("pendingBytes")).getValue()).isEqualTo(1100L);
        assertThat(((Gauge<?>) registered.get("pendingRecords")).getValue()).isEqualTo(22L);
        assertThat(((Gauge<?>) registered.get("currentFetchEventTimeLag")).getValue())
                .isEqualTo(42L);

        metrics.removeSplit("s-0");
        assertThat(metrics.pendingBytes()).isZero();
    }

    @Test
    void distanceBetweenPositions() {
        long seg = 1000;
        assertThat(NearstreamSourceReaderMetrics.distance(pos(1, 3, 100), pos(1, 3, 400), seg))
                .isEqualTo(300);
        assertThat(NearstreamSourceReaderMetrics.distance(pos(1, 3, 100), pos(2, 6, 50), seg))
                .isEqualTo(900 + 2 * 1000 + 50);
        assertThat(NearstreamSourceReaderMetrics.distance(pos(2, 6, 50), pos(2, 6, 50), seg))
                .isZero();
        assertThat(NearstreamSourceReaderMetrics.distance(Position.EARLIEST, pos(1, 1, 5), seg))
                .isZero();
    }

    private static Position pos(long g, long s, int o) {
        return new Position(g, s, o);
    }
}
