package io.nearstream.flink.source.enumerator;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.Position;
import io.nearstream.client.StatusCode;
import io.nearstream.client.StreamletMetadata;
import io.nearstream.flink.common.ConnectorChecks;
import io.nearstream.flink.source.BrokerErrors;
import io.nearstream.flink.source.NearstreamClientFactory;
import io.nearstream.flink.source.NearstreamException;
import io.nearstream.flink.source.NearstreamStartingPositions;
import io.nearstream.flink.source.NearstreamStoppingPositions;
import io.nearstream.flink.source.event.PushPeersEvent;
import io.nearstream.flink.source.event.PushRingAssignedEvent;
import io.nearstream.flink.source.event.PushRingRequestEvent;
import io.nearstream.flink.source.event.ReaderStartedEvent;
import io.nearstream.flink.source.split.NearstreamSplit;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;
import org.apache.flink.annotation.VisibleForTesting;
import org.apache.flink.api.connector.source.ReaderInfo;
import org.apache.flink.api.connector.source.SourceEvent;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.connector.source.SplitsAssignment;
import org.apache.flink.util.FlinkRuntimeException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Discovers the streamlets of the stream and assigns one split per streamlet to the readers.
 *
 * <p>All broker I/O (Metadata, timestamp lookups, DNS of the broker host) runs in {@link
 * SplitEnumeratorContext#callAsync} on the coordinator's worker thread; the handlers change state
 * on the coordinator thread. Discovery is periodic for an unbounded source (a stream created after
 * the job started is picked up; its streamlets are read from the earliest data) and runs once for a
 * bounded one.
 *
 * <p>Assignment waits until every subtask has registered and started once (its {@link
 * ReaderStartedEvent}), so the reader locations and push election scopes are known, then follows
 * {@link SplitOwnerSelector}: readers on the host of the split's serving broker first ({@link
 * StreamLocality}: the one broker's, or over a cluster each streamlet's leader or an in-sync
 * replica of it on the reader's host), {@code streamlet mod parallelism} otherwise. A subtask that
 * has not registered {@link #READER_REGISTRATION_GRACE_MS} after start (batch jobs scheduled in
 * waves) ends the waiting: from then on owners are {@code streamlet mod parallelism}. A split
 * handed back after a failure goes back to its owner when that reader registers again. A bounded
 * source tells each reader that no more splits will come once no waiting split is owed to it. Over
 * a cluster, splits handed back after a failure wait for a fresh view of the cluster ({@link
 * #refreshLocality}): the failure may be the end of a follower's push subscription, and the
 * readers' new attempts decide with a fresh view too.
 *
 * <p>Before splits reach their readers, every reader learns, for each broker its host pushes from
 * (over a cluster, those on its host; {@link StreamLocality#localBrokers}), which subtasks of its
 * host hold pushed splits of that broker and which TaskManager JVM holds the host's push
 * subscription to it ({@code PushPeersEvent}, computed by {@link PushPeerTracker}): that JVM's push
 * group waits for all of them and subscribes once. Readers of the host's other JVMs get their rings
 * from it through this enumerator, which relays their {@link PushRingRequestEvent}s and the {@link
 * PushRingAssignedEvent} answers.
 */
@Internal
public class NearstreamSourceEnumerator
        implements SplitEnumerator<NearstreamSplit, NearstreamEnumState> {

    private static final Logger LOG = LoggerFactory.getLogger(NearstreamSourceEnumerator.class);

    /** Attempts of a one-shot discovery before a retriable broker error fails the job. */
    private static final int DISCOVERY_ATTEMPTS = 3;

    /**
     * How long assignment waits for every subtask to register before it stops insisting on
     * locality: a batch job scheduled in waves starts some source subtasks only after others
     * finished, and those must not wait for splits forever.
     */
    @VisibleForTesting static final long READER_REGISTRATION_GRACE_MS = 10_000;

    private final SplitEnumeratorContext<NearstreamSplit> context;
    private final String broker;
    private final String stream;
    private final NearstreamClientFactory clientFactory;
    private final NearstreamStartingPositions startingPositions;
    @Nullable private final NearstreamStoppingPositions stoppingPositions;
    private final long discoveryIntervalMs;
    private final long requestTimeoutMs;
    // Streamlets whose leader is on another host are pushed from a local in-sync replica.
    private final boolean followerReads;

    /** Splits handed to readers, by streamlet; their progress is the readers' business. */
    private final Map<Integer, NearstreamSplit> assignedSplits = new TreeMap<>();

    /** Initialized splits waiting for their owner, by streamlet. */
    private final Map<Integer, NearstreamSplit> unassignedSplits = new TreeMap<>();

    /** Location of every subtask that registered at least once. */
    private final Map<Integer, String> readerHosts = new HashMap<>();

    /** Election scopes of the readers and who holds splits: the push peers of each reader. */
    private final PushPeerTracker pushPeers = new PushPeerTracker();

    /** Readers told that no more splits will come (bounded mode). */
    private final Set<Integer> noMoreSplitsSignalled = new HashSet<>();

    /** Streamlets whose splits are being initialized on the worker thread. */
    private final Set<Integer> initializing = new HashSet<>();

    private boolean initialDiscoveryFinished;

    /** Set when not every subtask registered within the grace period after start. */
    private boolean registrationGraceExpired;

    /** Fresh views of the cluster asked for and not answered yet; assignment waits for them. */
    private int localityRefreshes;

    // Written on the worker thread (a refreshed one on the coordinator thread), read on the
    // coordinator thread.
    @Nullable private volatile StreamLocality locality;
    @Nullable private volatile NearstreamClient client;
    private volatile boolean closed;

    public NearstreamSourceEnumerator(
            SplitEnumeratorContext<NearstreamSplit> context,
            String broker,
            String stream,
            NearstreamClientFactory clientFactory,
            NearstreamStartingPositions startingPositions,
            @Nullable NearstreamStoppingPositions stoppingPositions,
            long discoveryIntervalMs,
            long requestTimeoutMs,
            boolean followerReads,
            NearstreamEnumState state) {
        this.context = context;
        this.broker = broker;
        this.stream = stream;
        this.clientFactory = clientFactory;
        this.startingPositions = startingPositions;
        this.stoppingPositions = stoppingPositions;
        this.discoveryIntervalMs = discoveryIntervalMs;
        this.requestTimeoutMs = requestTimeoutMs;
        this.followerReads = followerReads;
        state.assignedSplits().forEach(s -> assignedSplits.put(s.streamlet(), s));
        state.unassignedSplits().forEach(s -> unassignedSplits.put(s.streamlet(), s));
        this.initialDiscoveryFinished = state.initialDiscoveryFinished();
    }

    private boolean bounded() {
        return stoppingPositions != null;
    }

    private boolean periodicDiscovery() {
        return !bounded() && discoveryIntervalMs > 0;
    }

    @Override
    public void start() {
        context.callAsync(
                () -> null,
                (ignored, error) -> onRegistrationGraceExpired(),
                READER_REGISTRATION_GRACE_MS,
                READER_REGISTRATION_GRACE_MS);
        if (periodicDiscovery()) {
            LOG.info(
                    "Discovering the streamlets of stream '{}' on {} every {} ms",
                    stream,
                    broker,
                    discoveryIntervalMs);
            context.callAsync(this::discover, this::handleDiscovery, 0, discoveryIntervalMs);
        } else {
            LOG.info("Discovering the streamlets of stream '{}' on {} once", stream, broker);
            context.callAsync(this::discover, this::handleDiscovery);
        }
    }

    // ------------------------------------------------------------------ worker thread

    /** Result of one discovery: the stream's streamlets, or that the stream does not exist. */
    private static final class Discovery {
        final List<StreamletMetadata> streamlets;

        Discovery(List<StreamletMetadata> streamlets) {
            this.streamlets = streamlets;
        }
    }

    private synchronized NearstreamClient client() throws Exception {
        if (closed) {
            throw new IllegalStateException("the enumerator is closed");
        }
        NearstreamClient c = client;
        if (c == null) {
            c = clientFactory.create(broker);
            client = c;
        }
        return c;
    }

    /** Worker thread: Metadata RPC (retried when a one-shot discovery meets a retriable error). */
    private Discovery discover() throws Exception {
        int attempts = periodicDiscovery() ? 1 : DISCOVERY_ATTEMPTS;
        for (int attempt = 1; ; attempt++) {
            try {
                List<StreamletMetadata> streamlets =
                        client().metadata(stream).get(requestTimeoutMs, TimeUnit.MILLISECONDS);
                if (locality == null) {
                    locality = loadLocality();
                    LOG.info("Stream {} locality: {}", stream, locality);
                }
                return new Discovery(streamlets);
            } catch (Exception e) {
                if (BrokerErrors.statusOf(e) == StatusCode.STREAM_NOT_FOUND) {
                    return new Discovery(null);
                }
                if (!BrokerErrors.isRetriable(e) || attempt >= attempts) {
                    throw e;
                }
                LOG.warn(
                        "Metadata of stream '{}' failed (attempt {}), retrying",
                        stream,
                        attempt,
                        e);
                Thread.sleep(200L * attempt);
            }
        }
    }

    /**
     * Worker thread: where the stream's streamlets are served. Over a cluster, from its placement
     * (leaders and in-sync sets) in the cluster's current view; otherwise the one broker's host.
     */
    private StreamLocality loadLocality() throws Exception {
        if (!ConnectorChecks.isCluster(broker)) {
            return StreamLocality.standalone(broker);
        }
        return StreamLocality.of(
                client().clusterMetadata(stream).get(requestTimeoutMs, TimeUnit.MILLISECONDS),
                stream,
                followerReads);
    }

    /** Worker thread: resolves starting (and stopping) positions of newly found streamlets. */
    private List<NearstreamSplit> initializeSplits(
            List<StreamletMetadata> newStreamlets, boolean initial) throws Exception {
        Map<Integer, Position> starts;
        if (initial) {
            starts = startingPositions.resolve(client(), stream, newStreamlets, requestTimeoutMs);
        } else {
            // A stream or streamlet that appeared while the job ran: read all of it.
            starts = new HashMap<>();
            for (StreamletMetadata s : newStreamlets) {
                starts.put(s.streamlet(), Position.EARLIEST);
            }
        }
        Map<Integer, Position> stops =
                stoppingPositions == null ? Map.of() : stoppingPositions.resolve(newStreamlets);
        List<NearstreamSplit> splits = new ArrayList<>(newStreamlets.size());
        for (StreamletMetadata s : newStreamlets) {
            Position start = starts.get(s.streamlet());
            if (start == null) {
                throw new NearstreamException(
                        "No starting position resolved for streamlet "
                                + s.streamlet()
                                + " of stream '"
                                + stream
                                + "'");
            }
            splits.add(
                    new NearstreamSplit(stream, s.streamlet(), start, 0, stops.get(s.streamlet())));
        }
        return splits;
    }

    // ------------------------------------------------------------------ coordinator thread

    private void handleDiscovery(@Nullable Discovery discovery, @Nullable Throwable error) {
        if (error != null) {
            if (periodicDiscovery() && BrokerErrors.isRetriable(error)) {
                LOG.warn(
                        "Discovery of stream '{}' failed; trying again in {} ms",
                        stream,
                        discoveryIntervalMs,
                        error);
                return;
            }
            throw asRuntime("Discovering the streamlets of stream '" + stream + "'", error);
        }
        if (discovery.streamlets == null) {
            if (!periodicDiscovery()) {
                throw new NearstreamException(
                        "Stream '"
                                + stream
                                + "' does not exist on "
                                + broker
                                + " (create it first, or let an unbounded source wait for it"
                                + " with a positive streamlet discovery interval)",
                        StatusCode.STREAM_NOT_FOUND,
                        null);
            }
            if (!initialDiscoveryFinished) {
                LOG.info(
                        "Stream '{}' does not exist yet; looking again in {} ms",
                        stream,
                        discoveryIntervalMs);
                // Whatever appears from now on is new: it is read from its earliest data.
                initialDiscoveryFinished = true;
            }
            assignPendingSplits();
            return;
        }
        List<StreamletMetadata> newStreamlets = new ArrayList<>();
        for (StreamletMetadata s : discovery.streamlets) {
            if (!assignedSplits.containsKey(s.streamlet())
                    && !unassignedSplits.containsKey(s.streamlet())
                    && !initializing.contains(s.streamlet())) {
                newStreamlets.add(s);
            }
        }
        if (newStreamlets.isEmpty()) {
            initialDiscoveryFinished = true;
            assignPendingSplits();
            return;
        }
        boolean initial = !initialDiscoveryFinished;
        LOG.info(
                "Found {} new streamlet(s) of stream '{}'{}",
                newStreamlets.size(),
                stream,
                initial ? "" : " (read from their earliest data)");
        newStreamlets.forEach(s -> initializing.add(s.streamlet()));
        context.callAsync(
                () -> initializeSplits(newStreamlets, initial),
                (splits, failure) -> {
                    newStreamlets.forEach(s -> initializing.remove(s.streamlet()));
                    handleNewSplits(splits, failure);
                });
    }

    private void handleNewSplits(
            @Nullable List<NearstreamSplit> splits, @Nullable Throwable error) {
        if (error != null) {
            throw asRuntime("Resolving the starting positions of stream '" + stream + "'", error);
        }
        initialDiscoveryFinished = true;
        for (NearstreamSplit split : splits) {
            if (!assignedSplits.containsKey(split.streamlet())) {
                unassignedSplits.putIfAbsent(split.streamlet(), split);
            }
        }
        assignPendingSplits();
    }

    @Override
    public void addReader(int subtaskId) {
        ReaderInfo info = context.registeredReaders().get(subtaskId);
        String host = info == null || info.getLocation() == null ? "" : info.getLocation();
        readerHosts.put(subtaskId, host);
        pushPeers.readerRegistered(subtaskId, host); // its ReaderStartedEvent follows
        noMoreSplitsSignalled.remove(subtaskId); // a new reader attempt
        LOG.debug("Reader {} registered on '{}'", subtaskId, host);
        assignPendingSplits();
    }

    @Override
    public void addSplitsBack(List<NearstreamSplit> splits, int subtaskId) {
        LOG.info("Reader {} handed back {}", subtaskId, splits);
        for (NearstreamSplit split : splits) {
            assignedSplits.remove(split.streamlet());
            pushPeers.splitReturned(split.streamlet());
            unassignedSplits.put(split.streamlet(), split);
        }
        refreshLocality();
        assignPendingSplits();
    }

    /**
     * Over a cluster, asks for a fresh view before splits handed back are assigned again: a reader
     * failed, maybe because the broker that pushed its splits stopped serving them (a follower that
     * left the in-sync set, a leader that moved), and the serving brokers may have changed. The
     * readers' new attempts take a fresh view as they start; with one here too, both decide with
     * the same rule on views of about the same instant. A failed refresh keeps the view there was.
     */
    private void refreshLocality() {
        if (!ConnectorChecks.isCluster(broker) || locality == null) {
            return;
        }
        localityRefreshes++;
        context.callAsync(
                this::loadLocality,
                (fresh, error) -> {
                    localityRefreshes--;
                    if (error != null) {
                        LOG.warn(
                                "Refreshing the locality of stream '{}' failed; keeping {}",
                                stream,
                                locality,
                                error);
                    } else {
                        locality = fresh;
                        LOG.info("Stream {} locality (refreshed): {}", stream, fresh);
                    }
                    assignPendingSplits();
                });
    }

    @Override
    public void handleSourceEvent(int subtaskId, SourceEvent sourceEvent) {
        if (sourceEvent instanceof ReaderStartedEvent started) {
            LOG.debug("Reader {} started: {}", subtaskId, started);
            pushPeers.readerStarted(subtaskId, started);
            assignPendingSplits();
        } else if (sourceEvent instanceof PushRingRequestEvent request) {
            relayRingRequest(subtaskId, request);
        } else if (sourceEvent instanceof PushRingAssignedEvent assigned) {
            relay(assigned.subtask(), assigned);
        } else {
            LOG.warn("Ignoring unknown source event {} from reader {}", sourceEvent, subtaskId);
        }
    }

    /**
     * Forwards a reader's ring request to the group that holds its host's subscription: through the
     * holding reader, or, once that one finished, through any other live reader of its JVM (the
     * group belongs to the JVM and outlives its first reader). When none is left, answers the
     * asking reader with a failure (a request of a reader that left needs no answer), so it fails
     * and Flink restarts it instead of it waiting for a ring.
     */
    private void relayRingRequest(int from, PushRingRequestEvent request) {
        int via = pushPeers.liveReaderOfJvm(request.leader(), context.registeredReaders().keySet());
        if (via >= 0) {
            context.sendEventToSourceReader(via, request);
        } else if (!request.left()) {
            String failure =
                    "the reader holding this host's push subscription to broker "
                            + request.broker()
                            + " (subtask "
                            + request.leader()
                            + ") is gone";
            relay(from, new PushRingAssignedEvent(request.broker(), from, null, failure));
        }
    }

    /**
     * The brokers whose push groups a reader on {@code host} belongs to: a standalone broker's, on
     * every host (whether a reader pushes is its read mode's decision); over a cluster, those on
     * its host.
     */
    private List<Integer> pushBrokersOfHost(String host) {
        StreamLocality locality = this.locality;
        if (locality == null || !ConnectorChecks.isCluster(broker)) {
            return List.of(StreamLocality.STANDALONE_BROKER);
        }
        return locality.localBrokers(host);
    }

    private void relay(int to, SourceEvent event) {
        if (context.registeredReaders().containsKey(to)) {
            context.sendEventToSourceReader(to, event);
        } else {
            LOG.info("Not relaying {} to reader {}: it is not registered", event, to);
        }
    }

    @Override
    public void handleSplitRequest(int subtaskId, @Nullable String requesterHostname) {
        // Splits are pushed to readers when they register or are discovered.
    }

    private void onRegistrationGraceExpired() {
        if (!registrationGraceExpired && !allReadersKnown(context.currentParallelism())) {
            registrationGraceExpired = true;
            LOG.info(
                    "Not every reader registered within {} ms; assigning splits by streamlet mod"
                            + " parallelism as their owners register",
                    READER_REGISTRATION_GRACE_MS);
            assignPendingSplits();
        }
    }

    /**
     * Assigns every waiting split whose owner is registered, after telling the readers their push
     * peers. A bounded source then tells each registered reader that owns no waiting split that no
     * more splits will come.
     */
    private void assignPendingSplits() {
        int parallelism = context.currentParallelism();
        Map<Integer, ReaderInfo> registered = context.registeredReaders();
        StreamLocality locality = this.locality;
        // Owners depend on the brokers' locality and every reader's location: wait for both (and
        // for a fresh view asked for), unless some reader is overdue (then, for good: streamlet
        // mod parallelism).
        boolean ownersKnown =
                locality != null
                        && localityRefreshes == 0
                        && (registrationGraceExpired || allReadersKnown(parallelism));
        if (!ownersKnown && !unassignedSplits.isEmpty()) {
            return;
        }
        Set<Integer> owedSplits = new HashSet<>();
        Map<Integer, List<NearstreamSplit>> assignment = new HashMap<>();
        boolean byLocality = !registrationGraceExpired && ownersKnown;
        for (NearstreamSplit split : new ArrayList<>(unassignedSplits.values())) {
            List<Integer> local =
                    byLocality ? localReaders(locality, split.streamlet(), parallelism) : List.of();
            int owner = SplitOwnerSelector.owner(split.streamlet(), parallelism, local);
            if (registered.containsKey(owner)) {
                assignment.computeIfAbsent(owner, k -> new ArrayList<>()).add(split);
                unassignedSplits.remove(split.streamlet());
                assignedSplits.put(split.streamlet(), split);
                // Push peers hold pushed splits: over a cluster, those served by a broker of their
                // host, in the group of that broker.
                String host = readerHosts.get(owner);
                if (locality == null || !ConnectorChecks.isCluster(broker)) {
                    pushPeers.splitAssigned(
                            split.streamlet(), owner, StreamLocality.STANDALONE_BROKER);
                } else if (locality.isLocal(split.streamlet(), host)) {
                    pushPeers.splitAssigned(
                            split.streamlet(),
                            owner,
                            locality.servingBroker(split.streamlet(), host));
                }
            } else {
                owedSplits.add(owner);
            }
        }
        if (ownersKnown) {
            // Before the splits: events reach a reader in order, so its push group knows whom to
            // wait for when the splits make it join.
            for (Map.Entry<Integer, PushPeersEvent> told :
                    pushPeers.changedPeers(registered.keySet(), this::pushBrokersOfHost)) {
                context.sendEventToSourceReader(told.getKey(), told.getValue());
            }
        }
        if (!assignment.isEmpty()) {
            LOG.info("Assigning splits {}", assignment);
            context.assignSplits(new SplitsAssignment<>(assignment));
        }
        if (bounded() && initialDiscoveryFinished) {
            for (int reader : registered.keySet()) {
                if (!owedSplits.contains(reader) && noMoreSplitsSignalled.add(reader)) {
                    context.signalNoMoreSplits(reader);
                }
            }
        }
    }

    private boolean allReadersKnown(int parallelism) {
        for (int i = 0; i < parallelism; i++) {
            if (!readerHosts.containsKey(i) || !pushPeers.started(i)) {
                return false;
            }
        }
        return true;
    }

    private List<Integer> localReaders(StreamLocality locality, int streamlet, int parallelism) {
        List<Integer> local = new ArrayList<>();
        for (int i = 0; i < parallelism; i++) {
            if (locality.isLocal(streamlet, readerHosts.get(i))) {
                local.add(i);
            }
        }
        return local;
    }

    @Override
    public NearstreamEnumState snapshotState(long checkpointId) {
        return new NearstreamEnumState(
                assignedSplits.values(), unassignedSplits.values(), initialDiscoveryFinished);
    }

    @Override
    public void close() {
        NearstreamClient c;
        synchronized (this) {
            closed = true;
            c = client;
            client = null;
        }
        if (c != null) {
            c.close();
        }
    }

    @VisibleForTesting
    Collection<NearstreamSplit> unassignedSplits() {
        return unassignedSplits.values();
    }

    private static RuntimeException asRuntime(String what, Throwable error) {
        if (!BrokerErrors.isRetriable(error)) {
            return BrokerErrors.fatal(what, error);
        }
        IOException retriable = BrokerErrors.failure(what, error);
        return new FlinkRuntimeException(retriable.getMessage(), retriable);
    }
}
