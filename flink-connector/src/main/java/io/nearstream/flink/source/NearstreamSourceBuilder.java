package io.nearstream.flink.source;

import static org.apache.flink.util.Preconditions.checkArgument;
import static org.apache.flink.util.Preconditions.checkNotNull;
import static org.apache.flink.util.Preconditions.checkState;

import io.nearstream.client.RecordFilter;
import io.nearstream.client.SlotFormat;
import io.nearstream.flink.common.ConnectorChecks;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import io.nearstream.jni.ShmLayout;
import java.time.Duration;
import java.util.UUID;
import javax.annotation.Nullable;
import org.apache.flink.annotation.PublicEvolving;
import org.apache.flink.annotation.VisibleForTesting;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.Configuration;

/**
 * Builds a {@link NearstreamSource}. Required: {@link #setBrokers}, {@link #setStream} and {@link
 * #setDeserializer}. Defaults: {@link ReadMode#PULL}, {@link
 * NearstreamStartingPositions#earliest()}, unbounded with streamlet discovery every 10 s, fetches
 * of 1 MiB per streamlet with a 500 ms long-poll wait.
 *
 * <pre>{@code
 * NearstreamSource<byte[]> source =
 *         NearstreamSource.<byte[]>builder()
 *                 .setBrokers("127.0.0.1:7420")
 *                 .setStream("events")
 *                 .setStartingPositions(NearstreamStartingPositions.timestamp(startMs))
 *                 .setBounded(NearstreamStoppingPositions.latest())
 *                 .setDeserializer(NearstreamRecordDeserializationSchema.bytes())
 *                 .setFetchMaxBytesPerStreamlet(4 << 20)
 *                 .build();
 * }</pre>
 *
 * @param <T> the type of the elements
 */
@PublicEvolving
public class NearstreamSourceBuilder<T> {

    /** The broker caps long polls at 60 s by default. */
    private static final long MAX_FETCH_WAIT_MS = 60_000;

    private String[] brokers;
    private String stream;
    private NearstreamStartingPositions startingPositions = NearstreamStartingPositions.earliest();
    @Nullable private NearstreamStoppingPositions stoppingPositions;
    private NearstreamRecordDeserializationSchema<T> deserializer;
    private final Configuration config = new Configuration();
    @Nullable private NearstreamClientFactory clientFactory;

    NearstreamSourceBuilder() {}

    /**
     * The broker to read from, as {@code host:port}, or several brokers of a cluster (each a {@code
     * host:port}, or one comma-separated bootstrap list): the source then learns from any of them
     * where each streamlet lives and reads it from its broker (docs/cluster.md). Over a cluster,
     * {@code AUTO} pushes the streamlets of the brokers on each reader's host (one subscription per
     * host and broker) and pulls the others; {@code PUSH} pushes them all, and fails a reader given
     * a streamlet whose broker runs on another host.
     */
    public NearstreamSourceBuilder<T> setBrokers(String... brokers) {
        this.brokers = checkNotNull(brokers, "brokers").clone();
        return this;
    }

    /** The stream to read. */
    public NearstreamSourceBuilder<T> setStream(String stream) {
        this.stream = checkNotNull(stream, "stream");
        return this;
    }

    /**
     * How readers get data: {@link ReadMode#PULL} (the default), {@code PUSH} or {@code AUTO}; the
     * same as {@code setProperty("nearstream.source.read-mode", ...)}.
     */
    public NearstreamSourceBuilder<T> setReadMode(ReadMode readMode) {
        config.set(NearstreamSourceOptions.READ_MODE, checkNotNull(readMode, "readMode"));
        return this;
    }

    /** Where a new job starts reading; ignored when restoring from a checkpoint. */
    public NearstreamSourceBuilder<T> setStartingPositions(
            NearstreamStartingPositions startingPositions) {
        this.startingPositions = checkNotNull(startingPositions, "startingPositions");
        return this;
    }

    /**
     * Makes the source bounded: each streamlet is read up to its stopping position and the job
     * finishes. Bounded sources discover streamlets once, at start.
     */
    public NearstreamSourceBuilder<T> setBounded(NearstreamStoppingPositions stoppingPositions) {
        this.stoppingPositions = checkNotNull(stoppingPositions, "stoppingPositions");
        return this;
    }

    /** Makes the source unbounded again (the default). */
    public NearstreamSourceBuilder<T> setUnbounded() {
        this.stoppingPositions = null;
        return this;
    }

    /** How records become elements. */
    public NearstreamSourceBuilder<T> setDeserializer(
            NearstreamRecordDeserializationSchema<T> deserializer) {
        this.deserializer = checkNotNull(deserializer, "deserializer");
        return this;
    }

    /** Shortcut for {@code setDeserializer(NearstreamRecordDeserializationSchema.of(schema))}. */
    public NearstreamSourceBuilder<T> setValueOnlyDeserializer(DeserializationSchema<T> schema) {
        return setDeserializer(NearstreamRecordDeserializationSchema.of(schema));
    }

    /** Chunk bytes per streamlet and Fetch RPC (default 1 MiB); at least one chunk comes back. */
    public NearstreamSourceBuilder<T> setFetchMaxBytesPerStreamlet(int bytes) {
        config.set(NearstreamSourceOptions.FETCH_MAX_BYTES_PER_STREAMLET, bytes);
        return this;
    }

    /** Long-poll wait of a Fetch when no streamlet has new data (default 500 ms; 0 to 60 000). */
    public NearstreamSourceBuilder<T> setFetchMaxWaitMs(long ms) {
        config.set(NearstreamSourceOptions.FETCH_MAX_WAIT, Duration.ofMillis(ms));
        return this;
    }

    /**
     * Push mode: the ring geometry of each reader (default 8 slots of 1 MiB). A slot holds one
     * batch of whole chunks, so {@code slotBytes} must exceed the largest chunk plus its Arrow
     * overhead.
     */
    public NearstreamSourceBuilder<T> setPushSlots(int slotsPerRing, int slotBytes) {
        config.set(NearstreamSourceOptions.PUSH_SLOTS_PER_RING, slotsPerRing);
        config.set(NearstreamSourceOptions.PUSH_SLOT_BYTES, slotBytes);
        return this;
    }

    /**
     * Push mode: how the broker's push thread fills the slots (default {@link SlotFormat#BINARY}:
     * it copies every record into the slot). {@link SlotFormat#BINARY_VIEW}: it writes a 16-byte
     * Arrow BinaryView per record that points into its segment files, which the readers map
     * read-only and copy each record from, so the push thread copies no record of a segment it
     * could share (docs/shm-layout.md, "View slots"). Emitted records are the same either way.
     */
    public NearstreamSourceBuilder<T> setPushSlotFormat(SlotFormat format) {
        checkNotNull(format, "format");
        config.set(NearstreamSourceOptions.PUSH_SLOT_FORMAT, format.configText());
        return this;
    }

    /**
     * Push mode: after how long without a heartbeat the broker reclaims a reader's ring, and a
     * reader gives up on a silent broker (default 10 s).
     */
    public NearstreamSourceBuilder<T> setPushConsumerTimeoutMs(long ms) {
        config.set(NearstreamSourceOptions.PUSH_CONSUMER_TIMEOUT, Duration.ofMillis(ms));
        return this;
    }

    /**
     * How often an unbounded source looks for the stream's streamlets, so that a stream created
     * after the job started is read (default 10 s). Zero or negative: discover once at start.
     */
    /**
     * Over a broker cluster, whether a streamlet whose leader is on another host is read from an
     * in-sync replica on the reader's host (default false: from its leader): pushed from it, or in
     * PULL mode fetched from it, a fetch the replica does not serve going to the leader instead.
     * The brokers must run with {@code --follower-reads}, or their followers send the readers back
     * to the leader.
     */
    public NearstreamSourceBuilder<T> setFollowerReads(boolean followerReads) {
        config.set(NearstreamSourceOptions.FOLLOWER_READS, followerReads);
        return this;
    }

    /**
     * Whether readers step over ranges the broker found damaged (status {@code DATA_LOSS}),
     * counting them in {@code numDamagedRangesSkipped}, instead of failing the job (the default).
     */
    public NearstreamSourceBuilder<T> setSkipDamagedData(boolean skip) {
        config.set(NearstreamSourceOptions.SKIP_DAMAGED_DATA, skip);
        return this;
    }

    /**
     * Records that fail {@code filter} are never emitted (default: {@link RecordFilter#none()};
     * docs/protocol.md, "Record filters", says what each kind passes). In push mode the
     * subscription carries it and the broker's push thread copies only the records that pass into
     * the slots, so the others never cross into the JVM (a chunk too large for a slot, which the
     * reader fetches itself, is filtered by the reader); in pull mode the reader applies the same
     * function to each fetched chunk's records before deserializing them. Both modes emit the same
     * records.
     *
     * <p>A record's index within its chunk (what checkpoints keep, {@code NearstreamRecord}'s
     * index) counts only the chunk's records that pass. So changing the filter between a savepoint
     * and a restore shifts the resume point inside a chunk the job had half read: the restored job
     * skips as many of that chunk's records passing the new filter as had passed the old one, and
     * may emit again or never emit some of that chunk's records. Chunks before and after it are not
     * affected.
     */
    public NearstreamSourceBuilder<T> setRecordFilter(RecordFilter filter) {
        checkNotNull(filter, "filter");
        config.set(NearstreamSourceOptions.RECORD_FILTER, filter.toSpec());
        return this;
    }

    public NearstreamSourceBuilder<T> setStreamletDiscoveryIntervalMs(long ms) {
        config.set(NearstreamSourceOptions.STREAMLET_DISCOVERY_INTERVAL, Duration.ofMillis(ms));
        return this;
    }

    /**
     * Sets any {@link NearstreamSourceOptions} key, or one of Flink's source reader options (e.g.
     * {@code source.reader.element.queue.capacity}), as a string.
     */
    public NearstreamSourceBuilder<T> setProperty(String key, String value) {
        checkNotNull(key, "key");
        checkNotNull(value, "value of %s", key);
        config.setString(key, value);
        return this;
    }

    /** Replaces how broker connections are opened (tests use in-memory fakes). */
    @VisibleForTesting
    NearstreamSourceBuilder<T> setClientFactory(NearstreamClientFactory clientFactory) {
        this.clientFactory = checkNotNull(clientFactory, "clientFactory");
        return this;
    }

    /** Checks the settings and builds the source; a wrong setting is explained. */
    public NearstreamSource<T> build() {
        String broker = ConnectorChecks.brokers(brokers);
        ConnectorChecks.stream(stream);
        checkState(
                deserializer != null,
                "No deserializer set: call setDeserializer(...), e.g."
                        + " NearstreamRecordDeserializationSchema.utf8()");
        int slots = option(NearstreamSourceOptions.PUSH_SLOTS_PER_RING);
        // The broker's bounds (docs/protocol.md, PushSubscribe): checked here so a job fails at
        // build time instead of restarting forever on INVALID_ARGUMENT.
        checkArgument(
                slots >= ShmLayout.MIN_SLOTS_PER_RING && slots <= ShmLayout.MAX_SLOTS_PER_RING,
                "Push slots per ring must be from %s to %s, got %s",
                ShmLayout.MIN_SLOTS_PER_RING,
                ShmLayout.MAX_SLOTS_PER_RING,
                slots);
        int slotBytes = option(NearstreamSourceOptions.PUSH_SLOT_BYTES);
        checkArgument(
                slotBytes >= ShmLayout.MIN_SLOT_BYTES
                        && slotBytes <= ShmLayout.MAX_PUSH_SLOT_BYTES
                        && slotBytes % ShmLayout.BUFFER_ALIGNMENT == 0,
                "Push slot bytes must be a multiple of %s from %s KiB to %s MiB, got %s",
                ShmLayout.BUFFER_ALIGNMENT,
                ShmLayout.MIN_SLOT_BYTES >> 10,
                ShmLayout.MAX_PUSH_SLOT_BYTES >> 20,
                slotBytes);
        // A filter given as a property is read here first, so a wrong one fails the build.
        RecordFilter.parseSpec(option(NearstreamSourceOptions.RECORD_FILTER));
        SlotFormat.parse(option(NearstreamSourceOptions.PUSH_SLOT_FORMAT));
        long consumerTimeoutMs = option(NearstreamSourceOptions.PUSH_CONSUMER_TIMEOUT).toMillis();
        checkArgument(
                consumerTimeoutMs >= 100 && consumerTimeoutMs <= Integer.MAX_VALUE,
                "Push consumer timeout must be 100 ms to 2^31-1 ms, got %s ms",
                consumerTimeoutMs);

        int perStreamlet = option(NearstreamSourceOptions.FETCH_MAX_BYTES_PER_STREAMLET);
        checkArgument(
                perStreamlet > 0,
                "Fetch max bytes per streamlet must be positive, got %s",
                perStreamlet);
        int perFetch = option(NearstreamSourceOptions.FETCH_MAX_BYTES);
        checkArgument(
                perFetch >= perStreamlet,
                "Fetch max bytes (%s) must be at least the max bytes per streamlet (%s)",
                perFetch,
                perStreamlet);
        long waitMs = option(NearstreamSourceOptions.FETCH_MAX_WAIT).toMillis();
        checkArgument(
                waitMs >= 0 && waitMs <= MAX_FETCH_WAIT_MS,
                "Fetch max wait must be 0 to %s ms (the broker's long-poll cap), got %s ms",
                MAX_FETCH_WAIT_MS,
                waitMs);
        long timeoutMs = option(NearstreamSourceOptions.REQUEST_TIMEOUT).toMillis();
        checkArgument(timeoutMs > 0, "Request timeout must be positive, got %s ms", timeoutMs);
        int retries = option(NearstreamSourceOptions.FETCH_RETRIES);
        checkArgument(retries >= 0, "Fetch retries must be >= 0, got %s", retries);
        long backoffMs = option(NearstreamSourceOptions.FETCH_RETRY_BACKOFF).toMillis();
        checkArgument(backoffMs >= 0, "Fetch retry backoff must be >= 0 ms, got %s", backoffMs);
        option(NearstreamSourceOptions.STREAMLET_DISCOVERY_INTERVAL); // parses

        NearstreamClientFactory factory =
                clientFactory != null
                        ? clientFactory
                        : new DefaultNearstreamClientFactory(timeoutMs);
        return new NearstreamSource<>(
                broker,
                stream,
                option(NearstreamSourceOptions.READ_MODE),
                startingPositions,
                stoppingPositions,
                deserializer,
                new Configuration(config),
                factory,
                UUID.randomUUID().toString());
    }

    private <V> V option(ConfigOption<V> option) {
        try {
            return config.get(option);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "Invalid value '"
                            + config.toMap().get(option.key())
                            + "' for "
                            + option.key()
                            + ": "
                            + e.getMessage(),
                    e);
        }
    }
}
