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
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.function.ToIntFunction;
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
 * PushSplitReader} over all of this subtask's splits (over a broker cluster, one per read mode and
 * push broker: {@link ReadModeFetcherManager}), and the {@link NearstreamRecordEmitter} on the task
 * thread. Checkpoints carry each split's chunk position and the records already emitted from that
 * chunk; Nearstream keeps no consumer offsets, so nothing is committed to the broker.
 *
 * <p>On start it tells the enumerator its push election scope, its JVM ({@link
 * ReaderStartedEvent}); in push mode it passes each {@link PushPeersEvent} it gets back to the
 * {@link PushElection} of that event's broker and, when its JVM holds the host's subscription to
 * that broker, to its push group, which then waits for all those peers before it subscribes. A
 * reader that restored splits has them before that event can arrive, so it first tells their groups
 * to wait for it. Between the TaskManager JVMs of one host it relays: the {@link
 * PushRingRequestEvent}s of the host's other JVMs' readers go to the push group of their broker,
 * the {@link PushRingAssignedEvent} answers to its split reader. It tells the registry when it has
 * nothing left to read (no more splits will come and every one it had finished), so that relayed
 * readers stop waiting for it to join.
 */
@Internal
public class NearstreamSourceReader<T>
        extends SourceReaderBase<RecordRun, T, NearstreamSplit, NearstreamSplitState> {

    private static final Logger LOG = LoggerFactory.getLogger(NearstreamSourceReader.class);

    /**
     * This reader's place in the push group of one broker: the group in the registry, where its
     * ring comes from, the settings of the group's subscriptions, and how to open a connection to
     * the group's broker (a group with no reader of this JVM left subscribes through one of its
     * own).
     */
    public record PushGroup(
            PushSubscriptionRegistry.Key key,
            PushElection election,
            PushSubscriptionRegistry.Geometry geometry,
            Supplier<NearstreamClient> connect) {}

    private final PushSubscriptionRegistry registry;

    /** The push groups of this reader, by broker id; empty when it pulls. */
    private final Map<Integer, PushGroup> pushGroups;

    /** This reader in the registry's count of readers that may still join, per push group. */
    private final Map<Integer, Object> registryTokens = new HashMap<>();

    /** The broker a split is pushed from, or {@link ReadModeFetcherManager#PULLED}. */
    private final ToIntFunction<NearstreamSplit> pushBrokerOf;

    private boolean started;

    /** The brokers of the pushed splits restored before {@link #start()}. */
    private final Set<Integer> restoredPushBrokers = new TreeSet<>();

    /**
     * Splits added and not finished yet; with {@link #noMoreSplits}: whether this reader is done.
     */
    private final Set<String> unfinishedSplits = new HashSet<>();

    private boolean noMoreSplits;

    /**
     * @param fetchers the fetcher threads: one pull or push fetcher, or one per mode and broker
     * @param pushGroups the push group of each broker this reader pushes from (empty: it pulls)
     * @param pushBrokerOf the broker a split is pushed from, or {@link
     *     ReadModeFetcherManager#PULLED}; may throw for a split this reader cannot read
     */
    public NearstreamSourceReader(
            SplitFetcherManager<RecordRun, NearstreamSplit> fetchers,
            NearstreamRecordEmitter<T> recordEmitter,
            Configuration config,
            SourceReaderContext context,
            PushSubscriptionRegistry registry,
            Map<Integer, PushGroup> pushGroups,
            ToIntFunction<NearstreamSplit> pushBrokerOf) {
        super(fetchers, recordEmitter, config, context);
        this.registry = registry;
        this.pushGroups = Map.copyOf(pushGroups);
        this.pushBrokerOf = pushBrokerOf;
        this.pushGroups.forEach((b, g) -> registryTokens.put(b, registry.readerOpened(g.key())));
    }

    @Override
    public void addSplits(List<NearstreamSplit> splits) {
        for (NearstreamSplit split : splits) {
            int broker = pushBrokerOf.applyAsInt(split); // throws for a split it cannot read
            PushGroup group = pushGroups.get(broker);
            if (!started && group != null && restoredPushBrokers.add(broker)) {
                // Restored from a checkpoint: the fetcher joins the push group right away, before
                // the enumerator can tell us our peers.
                registry.awaitPeers(group.key());
                group.election().restoredSplits();
            }
            unfinishedSplits.add(split.splitId());
        }
        super.addSplits(splits);
    }

    @Override
    public void notifyNoMoreSplits() {
        noMoreSplits = true;
        tellRegistryIfDone();
        super.notifyNoMoreSplits();
    }

    private void tellRegistryIfDone() {
        if (noMoreSplits && unfinishedSplits.isEmpty()) {
            leavePushGroups();
        }
    }

    private void leavePushGroups() {
        pushGroups.forEach((b, g) -> registry.readerDone(g.key(), registryTokens.get(b)));
    }

    @Override
    public void close() throws Exception {
        try {
            super.close();
        } finally {
            leavePushGroups();
        }
    }

    @Override
    public void start() {
        started = true;
        context.sendSourceEventToCoordinator(
                new ReaderStartedEvent(registry.scopeId(), restoredPushBrokers));
        super.start();
    }

    @Override
    public void handleSourceEvents(SourceEvent sourceEvent) {
        if (sourceEvent instanceof PushPeersEvent peers) {
            PushGroup group = pushGroups.get(peers.broker());
            if (group != null) {
                group.election().told(peers);
                if (!peers.relayed()) {
                    registry.peersKnown(group.key(), peers.subtasks());
                }
            }
        } else if (sourceEvent instanceof PushRingRequestEvent request) {
            PushGroup group = pushGroups.get(request.broker());
            if (group != null) {
                registry.relayed(
                        group.key(),
                        request.subtask(),
                        request.splits(),
                        request.left(),
                        group.geometry(),
                        ringRelay(request.broker()),
                        group.connect());
            } else {
                LOG.warn(
                        "Reader has no push group of broker {}: ignoring {}",
                        request.broker(),
                        request);
            }
        } else if (sourceEvent instanceof PushRingAssignedEvent assigned) {
            PushGroup group = pushGroups.get(assigned.broker());
            if (group != null) {
                group.election().answered(assigned);
            }
        } else {
            super.handleSourceEvents(sourceEvent);
        }
    }

    /**
     * Answers relayed members of {@code broker}'s group through the enumerator; any thread (the
     * group answers on the thread that ran its RPC). Best effort: a reader that is closing cannot
     * send any more, and the asking reader then fails on its answer timeout.
     */
    private PushSubscriptionRegistry.RingRelay ringRelay(int broker) {
        return new PushSubscriptionRegistry.RingRelay() {
            @Override
            public void assigned(int subtaskIndex, PushSubscriptionRegistry.Attachment a) {
                send(new PushRingAssignedEvent(broker, subtaskIndex, a, null));
            }

            @Override
            public void failed(int subtaskIndex, String failure) {
                send(new PushRingAssignedEvent(broker, subtaskIndex, null, failure));
            }

            private void send(PushRingAssignedEvent answer) {
                try {
                    context.sendSourceEventToCoordinator(answer);
                } catch (RuntimeException e) {
                    LOG.warn("Could not relay {}: {}", answer, e.toString());
                }
            }
        };
    }

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
