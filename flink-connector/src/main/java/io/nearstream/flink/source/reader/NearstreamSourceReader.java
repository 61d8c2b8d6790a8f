package io.nearstream.flink.source.reader;

import io.nearstream.client.NearstreamRecord;
import io.nearstream.flink.source.split.NearstreamSplit;
import io.nearstream.flink.source.split.NearstreamSplitState;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.source.reader.SingleThreadMultiplexSourceReaderBase;
import org.apache.flink.connector.base.source.reader.splitreader.SplitReader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The source reader: one fetcher thread running a {@link PullSplitReader} over all of this
 * subtask's splits, and the {@link NearstreamRecordEmitter} on the task thread. Checkpoints carry
 * each split's chunk position and the records already emitted from that chunk; Nearstream keeps no
 * consumer offsets, so nothing is committed to the broker.
 */
@Internal
public class NearstreamSourceReader<T>
        extends SingleThreadMultiplexSourceReaderBase<
                NearstreamRecord, T, NearstreamSplit, NearstreamSplitState> {

    private static final Logger LOG = LoggerFactory.getLogger(NearstreamSourceReader.class);

    public NearstreamSourceReader(
            Supplier<SplitReader<NearstreamRecord, NearstreamSplit>> splitReaderSupplier,
            NearstreamRecordEmitter<T> recordEmitter,
            Configuration config,
            SourceReaderContext context) {
        super(splitReaderSupplier, recordEmitter, config, context);
    }

    @Override
    protected void onSplitFinished(Map<String, NearstreamSplitState> finishedSplitIds) {
        finishedSplitIds.forEach(
                (id, state) ->
                        LOG.info(
                                "Finished split {} at {} (+{} records)",
                                id,
                                state.chunkPosition(),
                                state.recordsEmitted()));
    }

    @Override
    protected NearstreamSplitState initializedState(NearstreamSplit split) {
        return new NearstreamSplitState(split);
    }

    @Override
    protected NearstreamSplit toSplitType(String splitId, NearstreamSplitState state) {
        return state.toSplit();
    }
}
