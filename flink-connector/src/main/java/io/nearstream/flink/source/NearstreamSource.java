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
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.function.Supplier;
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
        Supplier<SplitReader<RecordRun, NearstreamSplit>> pull =
                () -> new PullSplitReader(openClient(), stream, config, metrics);
        // Which splits this reader pushes, and through which broker's push group.
        Predicate<NearstreamSplit> pushed = split -> false;
        String pushBroker = null;
        if (ConnectorChecks.isCluster(broker)) {
            if (readMode == ReadMode.AUTO) {
                // The streamlets of this host's broker by push, the others by fetch RPCs.
                StreamLocality locality = clusterLocality();
                OptionalInt id = locality.pushBroker(host);
                if (id.isPresent()) {
                    pushBroker = locality.address(id.getAsInt());
                    pushed = split -> locality.pushes(split.streamlet(), host);
                }
            }
        } else if (pushes(host)) {
            pushBroker = broker;
            pushed = split -> true;
        }
        PushSubscriptionRegistry.Key key = null;
        PushElection election = null;
        SplitFetcherManager<RecordRun, NearstreamSplit> fetchers;
        if (pushBroker == null) {
            fetchers = new SingleThreadFetcherManager<>(pull, config);
        } else {
            key = new PushSubscriptionRegistry.Key(pushBroker, stream, sourceId);
            PushSubscriptionRegistry.Key pushGroup = key;
            PushElection pushElection =
                    new PushElection(readerContext::sendSourceEventToCoordinator);
            election = pushElection;
            Supplier<SplitReader<RecordRun, NearstreamSplit>> push =
                    () ->
                            new PushSplitReader(
                                    openClient(),
                                    stream,
                                    config,
                                    metrics,
                                    PushSubscriptionRegistry.INSTANCE,
                                    pushElection,
                                    pushGroup,
                                    subtask);
            fetchers =
                    ConnectorChecks.isCluster(broker)
                            ? new ReadModeFetcherManager(pushed, push, pull, config)
                            : new SingleThreadFetcherManager<>(push, config);
        }
        return new NearstreamSourceReader<>(
                fetchers,
                new NearstreamRecordEmitter<>(
                        deserializer,
                        readerContext.metricGroup().getIOMetricGroup().getNumRecordsInCounter()),
                config,
                readerContext,
                PushSubscriptionRegistry.INSTANCE,
                key,
                election,
                pushed,
                this::openClient);
    }

    /**
     * Where the stream's streamlets live in the cluster (ClusterMetadata, then host names
     * resolved): the reader asks once as it starts, as the enumerator did.
     */
    private StreamLocality clusterLocality() throws Exception {
        long timeoutMs = config.get(NearstreamSourceOptions.REQUEST_TIMEOUT).toMillis();
        try (NearstreamClient client = openClient()) {
            return StreamLocality.of(
                    client.clusterMetadata(stream).get(timeoutMs, TimeUnit.MILLISECONDS), stream);
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
        try {
            return clientFactory.create(broker);
        } catch (Exception e) {
            throw new NearstreamException(
                    "Cannot connect to the Nearstream broker " + broker, null, e);
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
