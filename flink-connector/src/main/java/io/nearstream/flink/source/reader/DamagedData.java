package io.nearstream.flink.source.reader;

import io.nearstream.client.Position;
import io.nearstream.client.StatusCode;
import io.nearstream.flink.source.BrokerErrors;
import io.nearstream.flink.source.NearstreamSourceOptions;
import io.nearstream.flink.source.metrics.NearstreamSourceReaderMetrics;
import org.apache.flink.annotation.Internal;
import org.apache.flink.configuration.Configuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What both readers do when a split reaches a range the broker's recovery found damaged ({@code
 * DATA_LOSS} on a fetch, a {@code SLOT_DAMAGED} marker in push mode): fail the job by default,
 * naming the stream, streamlet and positions, so no acknowledged record goes missing unnoticed;
 * with {@link NearstreamSourceOptions#SKIP_DAMAGED_DATA}, log it, count it and go on after it.
 */
@Internal
public final class DamagedData {

    private static final Logger LOG = LoggerFactory.getLogger(DamagedData.class);

    private final String stream;
    private final boolean skip;
    private final NearstreamSourceReaderMetrics metrics;

    public DamagedData(String stream, Configuration config, NearstreamSourceReaderMetrics metrics) {
        this.stream = stream;
        this.skip = config.get(NearstreamSourceOptions.SKIP_DAMAGED_DATA);
        this.metrics = metrics;
    }

    /**
     * The split of {@code streamlet} stands at {@code from}, where a damaged range starts that ends
     * at {@code next}. Throws unless told to skip; returns where the split goes on.
     */
    public Position reached(int streamlet, Position from, Position next, String why) {
        long bytes =
                next.group() == from.group() && next.segment() == from.segment()
                        ? next.offset() - from.offset()
                        : 0;
        if (!skip) {
            metrics.fetchFailed();
            throw BrokerErrors.fatal(
                    "Reading streamlet " + streamlet + " of stream '" + stream + "'",
                    StatusCode.DATA_LOSS,
                    why);
        }
        LOG.warn(
                "Skipping {} damaged bytes of stream '{}' streamlet {} from {} to {}: {}",
                bytes,
                stream,
                streamlet,
                from,
                next,
                why);
        metrics.damagedRangeSkipped(bytes);
        return next;
    }
}
