package io.nearstream.flink.source.reader;

import io.nearstream.flink.source.event.PushPeersEvent;
import io.nearstream.flink.source.event.ReaderStartedEvent;
import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry;
import io.nearstream.flink.source.split.NearstreamSplit;
import io.nearstream.flink.source.split.NearstreamSplitState;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.connector.source.SourceEvent;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.source.reader.SingleThreadMultiplexSourceReaderBase;
import org.apache.flink.connector.base.source.reader.splitreader.SplitReader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The source reader: one fetcher thread running a {@link PullSplitReader} or {@link
 * PushSplitReader} over all of this subtask's splits, and the {@link NearstreamRecordEmitter} on
 * the task thread. Checkpoints carry each split's chunk position and the records already emitted
 * from that chunk; Nearstream keeps no consumer offsets, so nothing is committed to the broker.
 *
 * <p>On start it tells the enumerator its push election scope ({@link ReaderStartedEvent}); in push
 * mode it passes the {@link PushPeersEvent} it gets back to its push group, which then waits for
 * all those peers before it subscribes. A reader that restored splits joins its group before that
 * event can arrive, so it first tells the group to wait for it.
 */
@Internal
public class NearstreamSourceReader<T>
        extends SingleThreadMultiplexSourceReaderBase<
                RecordRun, T, NearstreamSplit, NearstreamSplitState> {

    private static final Logger LOG = LoggerFactory.getLogger(NearstreamSourceReader.class);

    private final PushSubscriptionRegistry registry;

    /** The push group of this reader, or null when it pulls. */
    @Nullable private final PushSubscriptionRegistry.Key pushGroup;

    private boolean started;
    private boolean restoredSplits;

    public NearstreamSourceReader(
            Supplier<SplitReader<RecordRun, NearstreamSplit>> splitReaderSupplier,
            NearstreamRecordEmitter<T> recordEmitter,
            Configuration config,
            SourceReaderContext context,
            PushSubscriptionRegistry registry,
            @Nullable PushSubscriptionRegistry.Key pushGroup) {
        super(splitReaderSupplier, recordEmitter, config, context);
        this.registry = registry;
        this.pushGroup = pushGroup;
    }

    @Override
    public void addSplits(List<NearstreamSplit> splits) {
        if (!started && !splits.isEmpty()) {
            // Restored from a checkpoint: the fetcher joins the push group right away, before the
            // enumerator can tell us our peers.
            restoredSplits = true;
            if (pushGroup != null) {
                registry.awaitPeers(pushGroup);
            }
        }
        super.addSplits(splits);
    }

    @Override
    public void start() {
        started = true;
        context.sendSourceEventToCoordinator(
                new ReaderStartedEvent(registry.scopeId(), restoredSplits));
        super.start();
    }

    @Override
    public void handleSourceEvents(SourceEvent sourceEvent) {
        if (sourceEvent instanceof PushPeersEvent peers) {
            if (pushGroup != null) {
                registry.peersKnown(pushGroup, peers.subtasks());
            }
        } else {
            super.handleSourceEvents(sourceEvent);
        }
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
