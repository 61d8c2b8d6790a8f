package io.nearstream.flink.source;

import io.nearstream.client.NearstreamClient;
import io.nearstream.flink.common.ConnectorChecks;
import io.nearstream.flink.source.enumerator.BrokerLocality;
import io.nearstream.flink.source.enumerator.NearstreamEnumState;
import io.nearstream.flink.source.enumerator.NearstreamEnumStateSerializer;
import io.nearstream.flink.source.enumerator.NearstreamSourceEnumerator;
import io.nearstream.flink.source.enumerator.StreamLocality;
import io.nearstream.flink.source.metrics.NearstreamSourceReaderMetrics;
import io.nearstream.flink.source.reader.NearstreamRecordEmitter;
import io.nearstream.flink.source.reader.NearstreamSourceReader;
import io.nearstream.flink.source.reader.PullSplitReader;
import io.nearstream.flink.source.reader.ReadModeFetcherManager;
import io.nearstream.flink.source.reader.RecordRun;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import io.nearstream.flink.source.reader.push.PushElection;
import io.nearstream.flink.source.reader.push.PushSplitReader;
import io.nearstream.flink.source.reader.push.PushSubscriptionRegistry;
import io.nearstream.flink.source.split.NearstreamSplit;
import io.nearstream.flink.source.split.NearstreamSplitSerializer;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import java.util.function.IntUnaryOperator;
import java.util.function.Supplier;
import java.util.function.ToIntFunction;
import javax.annotation.Nullable;
import org.apache.flink.annotation.PublicEvolving;
import org.apache.flink.annotation.VisibleForTesting;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.source.reader.fetcher.SingleThreadFetcherManager;
import org.apache.flink.connector.base.source.reader.fetcher.SplitFetcherManager;
import org.apache.flink.connector.base.source.reader.splitreader.SplitReader;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.util.UserCodeClassLoader;

/**
 * A Flink source reading a Nearstream stream: one split per streamlet, exactly-once through
 * checkpointed chunk positions (chunk + records already emitted from it), bounded or unbounded.
 *
 * <pre>{@code
 * NearstreamSource<String> source =
 *         NearstreamSource.<String>builder()
 *                 .setBrokers("10.0.0.7:7420")
 *                 .setStream("clicks")
 *                 .setReadMode(ReadMode.PULL)
 *                 .setStartingPositions(NearstreamStartingPositions.earliest())
 *                 .setDeserializer(NearstreamRecordDeserializationSchema.utf8())
 *                 .build();
 *
 * DataStream<String> clicks =
 *         env.fromSource(source, WatermarkStrategy.noWatermarks(), "clicks");
 * }</pre>
 *
 * <p>Records carry their chunk's timestamp as event timestamp; watermarks are generated per split
 * (streamlet) when a {@code WatermarkStrategy} is given. See {@link NearstreamSourceBuilder} for
 * every setting and {@code docs/flink-connector.md} for the semantics.
 *
 * @param <T> the type of the elements
 */
@PublicEvolving
public class NearstreamSource<T>
        implements Source<T, NearstreamSplit, NearstreamEnumState>, ResultTypeQueryable<T> {

    private static final long serialVersionUID = 1L;

    private final String broker;
    private final String stream;
    private final ReadMode readMode;
    private final NearstreamStartingPositions startingPositions;
    @Nullable private final NearstreamStoppingPositions stoppingPositions;
    private final NearstreamRecordDeserializationSchema<T> deserializer;
    private final Configuration config;
    private final NearstreamClientFactory clientFactory;

    /** Created by the builder, so identical in every subtask: keys the push election. */
    private final String sourceId;

    NearstreamSource(
            String broker,
            String stream,
            ReadMode readMode,
            NearstreamStartingPositions startingPositions,
            @Nullable NearstreamStoppingPositions stoppingPositions,
            NearstreamRecordDeserializationSchema<T> deserializer,
            Configuration config,
            NearstreamClientFactory clientFactory,
            String sourceId) {
        this.broker = broker;
        this.stream = stream;
        this.readMode = readMode;
        this.startingPositions = startingPositions;
        this.stoppingPositions = stoppingPositions;
        this.deserializer = deserializer;
        this.config = config;
        this.clientFactory = clientFactory;
        this.sourceId = sourceId;
    }

    /** A builder; see {@link NearstreamSourceBuilder}. */
    public static <T> NearstreamSourceBuilder<T> builder() {
        return new NearstreamSourceBuilder<>();
    }

    @Override
    public Boundedness getBoundedness() {
        return stoppingPositions == null ? Boundedness.CONTINUOUS_UNBOUNDED : Boundedness.BOUNDED;
    }

    @Override
    public SourceReader<T, NearstreamSplit> createReader(SourceReaderContext readerContext)
            throws Exception {
        deserializer.open(
                new DeserializationSchema.InitializationContext() {
                    @Override
                    public MetricGroup getMetricGroup() {
                        return readerContext.metricGroup().addGroup("deserializer");
                    }

                    @Override
                    public UserCodeClassLoader getUserCodeClassLoader() {
                        return readerContext.getUserCodeClassLoader();
                    }
                });
        NearstreamSourceReaderMetrics metrics =
                new NearstreamSourceReaderMetrics(readerContext.metricGroup());
        int subtask = readerContext.getIndexOfSubtask();
        String host = readerContext.getLocalHostName();
        boolean cluster = ConnectorChecks.isCluster(broker);
        boolean followerReads = config.get(NearstreamSourceOptions.FOLLOWER_READS);
        // Where the stream's streamlets are served, when this reader pushes any or fetches from
        // followers.
        StreamLocality locality =
                cluster && (readMode != ReadMode.PULL || followerReads) ? clusterLocality() : null;
        // Fetches go to each streamlet's serving broker for this host with follower reads on
        // (an in-sync replica here, else the leader); to the leaders otherwise.
        IntUnaryOperator pullFrom =
                locality != null && followerReads
                        ? streamlet -> locality.servingBroker(streamlet, host)
                        : null;
        Supplier<SplitReader<RecordRun, NearstreamSplit>> pull =
                () -> new PullSplitReader(openClient(), stream, config, metrics, pullFrom);
        // Which brokers this reader pushes from (their addresses, by id), and which broker each
        // split is pushed from.
        Map<Integer, String> pushBrokers = new TreeMap<>();
        ToIntFunction<NearstreamSplit> pushBrokerOf = split -> ReadModeFetcherManager.PULLED;
        if (cluster) {
            if (readMode != ReadMode.PULL) {
                // The streamlets served by a broker on this host (their leader, or an in-sync
                // replica of them) by push, from that broker's own subscription; the others by
                // fetch RPCs to their leaders in AUTO, refused in PUSH.
                for (int id : locality.localBrokers(host)) {
                    pushBrokers.put(id, locality.address(id));
                }
                pushBrokerOf = split -> clusterPushBroker(locality, split, host);
            }
        } else if (pushes(host)) {
            pushBrokers.put(StreamLocality.STANDALONE_BROKER, broker);
            pushBrokerOf = split -> StreamLocality.STANDALONE_BROKER;
        }
        // Over a cluster a group's broker may serve its streamlets from an in-sync copy: its
        // subscriptions are replica reads (a leader ignores the flag), sent over a connection to
        // that broker itself rather than routed to the streamlets' leaders.
        PushSubscriptionRegistry.Geometry geometry = PushSplitReader.geometry(config, cluster);
        Map<Integer, NearstreamSourceReader.PushGroup> pushGroups = new TreeMap<>();
        pushBrokers.forEach(
                (id, address) ->
                        pushGroups.put(
                                id,
                                new NearstreamSourceReader.PushGroup(
                                        new PushSubscriptionRegistry.Key(address, stream, sourceId),
                                        new PushElection(
                                                id, readerContext::sendSourceEventToCoordinator),
                                        geometry,
                                        cluster ? () -> openClient(address) : this::openClient)));
        IntFunction<Supplier<SplitReader<RecordRun, NearstreamSplit>>> push =
                id ->
                        () -> {
                            NearstreamSourceReader.PushGroup group = pushGroups.get(id);
                            NearstreamClient client = openClient();
                            return new PushSplitReader(
                                    client,
                                    // One broker: the reader's own connection carries the group.
                                    cluster ? group.connect() : () -> client,
                                    stream,
                                    config,
                                    group.geometry(),
                                    metrics,
                                    PushSubscriptionRegistry.INSTANCE,
                                    group.election(),
                                    group.key(),
                                    subtask);
                        };
        SplitFetcherManager<RecordRun, NearstreamSplit> fetchers;
        if (pushGroups.isEmpty()) {
            fetchers = new SingleThreadFetcherManager<>(pull, config);
        } else if (!ConnectorChecks.isCluster(broker)) {
            fetchers =
                    new SingleThreadFetcherManager<>(
                            push.apply(StreamLocality.STANDALONE_BROKER), config);
        } else {
            fetchers = new ReadModeFetcherManager(pushBrokerOf, push, pull, config);
        }
        return new NearstreamSourceReader<>(
                fetchers,
                new NearstreamRecordEmitter<>(
                        deserializer,
                        readerContext.metricGroup().getIOMetricGroup().getNumRecordsInCounter()),
                config,
                readerContext,
                PushSubscriptionRegistry.INSTANCE,
                pushGroups,
                pushBrokerOf);
    }

    /**
     * The broker a reader on {@code host} pushes {@code split} from over a cluster: its serving
     * broker for that host ({@link StreamLocality#servingBroker}: its leader, or an in-sync replica
     * of it) when that runs on the reader's host; else AUTO pulls it and PUSH fails, naming the
     * leader.
     */
    private int clusterPushBroker(StreamLocality locality, NearstreamSplit split, String host) {
        if (locality.isLocal(split.streamlet(), host)) {
            return locality.servingBroker(split.streamlet(), host);
        }
        if (readMode == ReadMode.AUTO) {
            return ReadModeFetcherManager.PULLED;
        }
        int leader = locality.leaderOf(split.streamlet());
        throw new NearstreamException(
                "PUSH reads streamlet "
                        + split.streamlet()
                        + " of stream '"
                        + stream
                        + "' from a broker on the reader's host, but its leader ("
                        + (leader < 0
                                ? "not known yet"
                                : "broker " + leader + " at " + locality.address(leader))
                        + ") does not run on this reader's host '"
                        + host
                        + "', nor does a broker in its in-sync set: PUSH needs a reader on the host"
                        + " of every broker of the stream; use AUTO to pull the others");
    }

    /**
     * Where the stream's streamlets live in the cluster (ClusterMetadata, then host names
     * resolved): the reader asks once as it starts, as the enumerator did.
     */
    private StreamLocality clusterLocality() throws Exception {
        long timeoutMs = config.get(NearstreamSourceOptions.REQUEST_TIMEOUT).toMillis();
        try (NearstreamClient client = openClient()) {
            return StreamLocality.of(
                    client.clusterMetadata(stream).get(timeoutMs, TimeUnit.MILLISECONDS),
                    stream,
                    config.get(NearstreamSourceOptions.FOLLOWER_READS));
        }
    }

    /**
     * Whether a reader on {@code readerHost} reads one broker's stream in push mode: always in
     * PUSH, never in PULL, in AUTO when it runs on the broker's host.
     */
    @VisibleForTesting
    boolean pushes(String readerHost) {
        switch (readMode) {
            case PUSH:
                return true;
            case AUTO:
                return BrokerLocality.resolve(broker).isLocal(readerHost);
            default:
                return false;
        }
    }

    private NearstreamClient openClient() {
        return openClient(broker);
    }

    /** A client of {@code address}: one broker, or a cluster for a bootstrap list. */
    private NearstreamClient openClient(String address) {
        try {
            return clientFactory.create(address);
        } catch (Exception e) {
            throw new NearstreamException(
                    "Cannot connect to the Nearstream broker " + address, null, e);
        }
    }

    @Override
    public SplitEnumerator<NearstreamSplit, NearstreamEnumState> createEnumerator(
            SplitEnumeratorContext<NearstreamSplit> enumContext) {
        return restoreEnumerator(enumContext, NearstreamEnumState.initial());
    }

    @Override
    public SplitEnumerator<NearstreamSplit, NearstreamEnumState> restoreEnumerator(
            SplitEnumeratorContext<NearstreamSplit> enumContext, NearstreamEnumState state) {
        return new NearstreamSourceEnumerator(
                enumContext,
                broker,
                stream,
                clientFactory,
                startingPositions,
                stoppingPositions,
                config.get(NearstreamSourceOptions.STREAMLET_DISCOVERY_INTERVAL).toMillis(),
                config.get(NearstreamSourceOptions.REQUEST_TIMEOUT).toMillis(),
                config.get(NearstreamSourceOptions.FOLLOWER_READS),
                state);
    }

    @Override
    public SimpleVersionedSerializer<NearstreamSplit> getSplitSerializer() {
        return NearstreamSplitSerializer.INSTANCE;
    }

    @Override
    public SimpleVersionedSerializer<NearstreamEnumState> getEnumeratorCheckpointSerializer() {
        return new NearstreamEnumStateSerializer();
    }

    @Override
    public TypeInformation<T> getProducedType() {
        return deserializer.getProducedType();
    }

    @VisibleForTesting
    String broker() {
        return broker;
    }

    @VisibleForTesting
    String stream() {
        return stream;
    }

    @VisibleForTesting
    ReadMode readMode() {
        return readMode;
    }

    @VisibleForTesting
    String sourceId() {
        return sourceId;
    }

    @VisibleForTesting
    Configuration configuration() {
        return config;
    }

    @Override
    public String toString() {
        return "NearstreamSource{broker="
                + broker
                + ", stream="
                + stream
                + ", readMode="
                + readMode
                + ", start="
                + startingPositions
                + (stoppingPositions != null ? ", stop=" + stoppingPositions : "")
                + '}';
    }
}
