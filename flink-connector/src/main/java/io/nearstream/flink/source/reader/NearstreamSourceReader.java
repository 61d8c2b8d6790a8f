package io.nearstream.flink.source.reader;

import io.nearstream.client.NearstreamClient;
import io.nearstream.flink.source.event.PushPeersEvent;
import io.nearstream.flink.source.event.PushRingAssignedEvent;
import io.nearstream.flink.source.event.PushRingRequestEvent;
import io.nearstream.flink.source.event.ReaderStartedEvent;
import io.nearstream.flink.source.reader.push.PushElection;
import io.nearstream.flink.source.reader.push.PushSplitReader;
import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry;
import io.nearstream.flink.source.split.NearstreamSplit;
import io.nearstream.flink.source.split.NearstreamSplitState;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;
import java.util.function.Supplier;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.connector.source.SourceEvent;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.source.reader.SourceReaderBase;
import org.apache.flink.connector.base.source.reader.fetcher.SplitFetcherManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The source reader: one fetcher thread running a {@link PullSplitReader} or {@link
 * PushSplitReader} over all of this subtask's splits (over a broker cluster in AUTO mode, one of
 * each: {@link ReadModeFetcherManager}), and the {@link NearstreamRecordEmitter} on the task
 * thread. Checkpoints carry each split's chunk position and the records already emitted from that
 * chunk; Nearstream keeps no consumer offsets, so nothing is committed to the broker.
 *
 * <p>On start it tells the enumerator its push election scope, its JVM ({@link
 * ReaderStartedEvent}); in push mode it passes the {@link PushPeersEvent} it gets back to its
 * {@link PushElection} and, when its JVM holds the host's subscription, to its push group, which
 * then waits for all those peers before it subscribes. A reader that restored splits has them
 * before that event can arrive, so it first tells its group to wait for it. Between the TaskManager
 * JVMs of one host it relays: the {@link PushRingRequestEvent}s of the host's other JVMs' readers
 * go to its push group, the {@link PushRingAssignedEvent} answers to its split reader. It tells the
 * registry when it has nothing left to read (no more splits will come and every one it had
 * finished), so that relayed readers stop waiting for it to join.
 */
@Internal
public class NearstreamSourceReader<T>
        extends SourceReaderBase<RecordRun, T, NearstreamSplit, NearstreamSplitState> {

    private static final Logger LOG = LoggerFactory.getLogger(NearstreamSourceReader.class);

    private final PushSubscriptionRegistry registry;

    /** The push group of this reader, or null when it pulls. */
    @Nullable private final PushSubscriptionRegistry.Key pushGroup;

    /** Where this reader's push ring comes from; null when it pulls. */
    @Nullable private final PushElection election;

    /** Ring geometry of this source's push subscription (used for relayed members). */
    @Nullable private final PushSubscriptionRegistry.Geometry geometry;

    /** Opens a connection to the broker (for a push group that has no reader of this JVM). */
    private final Supplier<NearstreamClient> connect;

    /** This reader in the registry's count of readers that may still join, or null (pull). */
    @Nullable private final Object registryToken;

    /** Which of this reader's splits are pushed (with a push group: all, or those of its host). */
    private final Predicate<NearstreamSplit> pushed;

    private boolean started;
    private boolean restoredSplits;

    /**
     * Splits added and not finished yet; with {@link #noMoreSplits}: whether this reader is done.
     */
    private final Set<String> unfinishedSplits = new HashSet<>();

    private boolean noMoreSplits;

    /**
     * @param fetchers the fetcher threads: one pull or push fetcher, or one of each
     * @param pushed which splits go to the push group (ignored without one)
     */
    public NearstreamSourceReader(
            SplitFetcherManager<RecordRun, NearstreamSplit> fetchers,
            NearstreamRecordEmitter<T> recordEmitter,
            Configuration config,
            SourceReaderContext context,
            PushSubscriptionRegistry registry,
            @Nullable PushSubscriptionRegistry.Key pushGroup,
            @Nullable PushElection election,
            Predicate<NearstreamSplit> pushed,
            Supplier<NearstreamClient> connect) {
        super(fetchers, recordEmitter, config, context);
        this.registry = registry;
        this.pushed = pushed;
        this.pushGroup = pushGroup;
        this.election = election;
        this.connect = connect;
        this.geometry = pushGroup == null ? null : PushSplitReader.geometry(config);
        this.registryToken = pushGroup == null ? null : registry.readerOpened(pushGroup);
    }

    @Override
    public void addSplits(List<NearstreamSplit> splits) {
        if (!started && splits.stream().anyMatch(pushed)) {
            // Restored from a checkpoint: the fetcher joins the push group right away, before the
            // enumerator can tell us our peers.
            restoredSplits = true;
            if (pushGroup != null) {
                registry.awaitPeers(pushGroup);
                election.restoredSplits();
            }
        }
        splits.forEach(s -> unfinishedSplits.add(s.splitId()));
        super.addSplits(splits);
    }

    @Override
    public void notifyNoMoreSplits() {
        noMoreSplits = true;
        tellRegistryIfDone();
        super.notifyNoMoreSplits();
    }

    private void tellRegistryIfDone() {
        if (pushGroup != null && noMoreSplits && unfinishedSplits.isEmpty()) {
            registry.readerDone(pushGroup, registryToken);
        }
    }

    @Override
    public void close() throws Exception {
        try {
            super.close();
        } finally {
            if (pushGroup != null) {
                registry.readerDone(pushGroup, registryToken);
            }
        }
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
                election.told(peers);
                if (!peers.relayed()) {
                    registry.peersKnown(pushGroup, peers.subtasks());
                }
            }
        } else if (sourceEvent instanceof PushRingRequestEvent request) {
            if (pushGroup != null) {
                registry.relayed(
                        pushGroup,
                        request.subtask(),
                        request.splits(),
                        request.left(),
                        geometry,
                        ringRelay,
                        connect);
            } else {
                LOG.warn("Reader pulls: ignoring {}", request);
            }
        } else if (sourceEvent instanceof PushRingAssignedEvent assigned) {
            if (election != null) {
                election.answered(assigned);
            }
        } else {
            super.handleSourceEvents(sourceEvent);
        }
    }

    /**
     * Answers relayed members through the enumerator; any thread (the group answers on the thread
     * that ran its RPC). Best effort: a reader that is closing cannot send any more, and the asking
     * reader then fails on its answer timeout.
     */
    private final PushSubscriptionRegistry.RingRelay ringRelay =
            new PushSubscriptionRegistry.RingRelay() {
                @Override
                public void assigned(int subtaskIndex, PushSubscriptionRegistry.Attachment a) {
                    send(new PushRingAssignedEvent(subtaskIndex, a, null));
                }

                @Override
                public void failed(int subtaskIndex, String failure) {
                    send(new PushRingAssignedEvent(subtaskIndex, null, failure));
                }

                private void send(PushRingAssignedEvent answer) {
                    try {
                        context.sendSourceEventToCoordinator(answer);
                    } catch (RuntimeException e) {
                        LOG.warn("Could not relay {}: {}", answer, e.toString());
                    }
                }
            };

    @Override
    protected void onSplitFinished(Map<String, NearstreamSplitState> finishedSplitIds) {
        unfinishedSplits.removeAll(finishedSplitIds.keySet());
        tellRegistryIfDone();
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
