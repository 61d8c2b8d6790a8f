package io.nearstream.client;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * Settings of a {@link NearstreamProducer}; the names follow Kafka's producer ({@code batch.size},
 * {@code linger.ms}, {@code max.in.flight.requests}, {@code retries}, {@code delivery.timeout.ms},
 * {@code buffer.memory}, {@code max.block.ms}).
 *
 * <pre>{@code
 * NearstreamProducerConfig config =
 *         NearstreamProducerConfig.builder("127.0.0.1:7420", "clicks")
 *                 .batchSizeBytes(64 * 1024)
 *                 .linger(Duration.ofMillis(5))
 *                 .partitioner(NearstreamPartitioner.keyHash())
 *                 .build();
 * }</pre>
 */
public final class NearstreamProducerConfig {

    private final String address;
    private final NearstreamClient client;
    private final NearstreamClientOptions clientOptions;
    private final String stream;
    private final int batchSizeBytes;
    private final Duration linger;
    private final int maxInFlightRequests;
    private final int maxRequestBytes;
    private final int retries;
    private final Duration retryBackoff;
    private final Duration deliveryTimeout;
    private final long bufferMemoryBytes;
    private final Duration maxBlock;
    private final long producerId;
    private final Supplier<NearstreamPartitioner> partitioner;

    private NearstreamProducerConfig(Builder b) {
        this.address = b.address;
        this.client = b.client;
        this.clientOptions = b.clientOptions;
        this.stream = b.stream;
        this.batchSizeBytes = b.batchSizeBytes;
        this.linger = b.linger;
        this.maxInFlightRequests = b.maxInFlightRequests;
        this.maxRequestBytes = b.maxRequestBytes;
        this.retries = b.retries;
        this.retryBackoff = b.retryBackoff;
        this.deliveryTimeout = b.deliveryTimeout;
        this.bufferMemoryBytes = b.bufferMemoryBytes;
        this.maxBlock = b.maxBlock;
        this.producerId = b.producerId;
        this.partitioner = b.partitioner;
    }

    /**
     * A producer that opens its own connection to {@code address}: one broker's {@code HOST:PORT},
     * or a cluster's comma-separated bootstrap list ({@link NearstreamClient#connect}).
     */
    public static Builder builder(String address, String stream) {
        return new Builder(Objects.requireNonNull(address, "address"), null, stream);
    }

    /** A producer on an existing client (not closed by the producer). */
    public static Builder builder(NearstreamClient client, String stream) {
        return new Builder(null, Objects.requireNonNull(client, "client"), stream);
    }

    public String address() {
        return client != null ? client.address() : address;
    }

    /** The client given to the builder, or {@code null} when the producer opens its own. */
    public NearstreamClient client() {
        return client;
    }

    public NearstreamClientOptions clientOptions() {
        return clientOptions;
    }

    public String stream() {
        return stream;
    }

    /** Target chunk size in bytes (header included); a larger record gets a chunk of its own. */
    public int batchSizeBytes() {
        return batchSizeBytes;
    }

    /** How long a chunk may wait for more records before it is sent. */
    public Duration linger() {
        return linger;
    }

    /** Append requests in flight at once (each carries chunks of several streamlets). */
    public int maxInFlightRequests() {
        return maxInFlightRequests;
    }

    /** Chunk bytes per append request; a request carries at least one chunk. */
    public int maxRequestBytes() {
        return maxRequestBytes;
    }

    /** Resends of a chunk after a retriable error, within {@link #deliveryTimeout()}. */
    public int retries() {
        return retries;
    }

    public Duration retryBackoff() {
        return retryBackoff;
    }

    /** Upper bound from {@code send()} to success or failure of a record. */
    public Duration deliveryTimeout() {
        return deliveryTimeout;
    }

    /** Bytes of records buffered before {@code send()} blocks. */
    public long bufferMemoryBytes() {
        return bufferMemoryBytes;
    }

    /** How long {@code send()} blocks for buffer space before it fails. */
    public Duration maxBlock() {
        return maxBlock;
    }

    /**
     * The producer id of every chunk: {@link #AUTO_PRODUCER_ID} (the default) = each producer made
     * from this config draws its own random id; 0 = not idempotent (retries may store duplicates);
     * any other value = that id (give each producer its own: the broker drops a chunk whose id and
     * sequence it has seen, so two producers sharing an id lose data).
     */
    public long producerId() {
        return producerId;
    }

    /** The id a producer uses: the configured one, or a fresh random non-zero one. */
    long producerIdForNewProducer() {
        if (producerId != AUTO_PRODUCER_ID) {
            return producerId;
        }
        long id;
        do {
            id = Builder.RANDOM.nextLong() & Long.MAX_VALUE;
        } while (id == 0);
        return id;
    }

    /** {@link #producerId()} when every producer draws its own id. */
    public static final long AUTO_PRODUCER_ID = -1;

    /** A new partitioner instance (partitioners may keep state, e.g. round-robin). */
    public NearstreamPartitioner newPartitioner() {
        return partitioner.get();
    }

    /** Builder of {@link NearstreamProducerConfig}. */
    public static final class Builder {
        private static final SecureRandom RANDOM = new SecureRandom();

        private final String address;
        private final NearstreamClient client;
        private NearstreamClientOptions clientOptions = NearstreamClientOptions.DEFAULTS;
        private final String stream;
        private int batchSizeBytes = 64 * 1024;
        private Duration linger = Duration.ofMillis(5);
        private int maxInFlightRequests = 5;
        private int maxRequestBytes = 4 * 1024 * 1024;
        private int retries = Integer.MAX_VALUE;
        private Duration retryBackoff = Duration.ofMillis(100);
        private Duration deliveryTimeout = Duration.ofMinutes(2);
        private long bufferMemoryBytes = 32L * 1024 * 1024;
        private Duration maxBlock = Duration.ofSeconds(60);
        private long producerId = AUTO_PRODUCER_ID;
        private Supplier<NearstreamPartitioner> partitioner = NearstreamPartitioner::roundRobin;

        private Builder(String address, NearstreamClient client, String stream) {
            this.address = address;
            this.client = client;
            this.stream = Objects.requireNonNull(stream, "stream");
        }

        public Builder clientOptions(NearstreamClientOptions options) {
            this.clientOptions = Objects.requireNonNull(options, "options");
            return this;
        }

        public Builder batchSizeBytes(int bytes) {
            check(bytes >= Chunks.HEADER_BYTES + 4, "batchSizeBytes must be >= 52, got %s", bytes);
            this.batchSizeBytes = bytes;
            return this;
        }

        public Builder linger(Duration linger) {
            check(!linger.isNegative(), "linger must not be negative, got %s", linger);
            this.linger = linger;
            return this;
        }

        public Builder maxInFlightRequests(int n) {
            check(n >= 1, "maxInFlightRequests must be >= 1, got %s", n);
            this.maxInFlightRequests = n;
            return this;
        }

        public Builder maxRequestBytes(int bytes) {
            check(bytes >= 1024, "maxRequestBytes must be >= 1024, got %s", bytes);
            this.maxRequestBytes = bytes;
            return this;
        }

        public Builder retries(int retries) {
            check(retries >= 0, "retries must be >= 0, got %s", retries);
            this.retries = retries;
            return this;
        }

        public Builder retryBackoff(Duration backoff) {
            check(!backoff.isNegative(), "retryBackoff must not be negative, got %s", backoff);
            this.retryBackoff = backoff;
            return this;
        }

        public Builder deliveryTimeout(Duration timeout) {
            check(
                    !timeout.isNegative() && !timeout.isZero(),
                    "deliveryTimeout must be positive, got %s",
                    timeout);
            this.deliveryTimeout = timeout;
            return this;
        }

        public Builder bufferMemoryBytes(long bytes) {
            check(bytes >= 1024, "bufferMemoryBytes must be >= 1024, got %s", bytes);
            this.bufferMemoryBytes = bytes;
            return this;
        }

        public Builder maxBlock(Duration maxBlock) {
            check(!maxBlock.isNegative(), "maxBlock must not be negative, got %s", maxBlock);
            this.maxBlock = maxBlock;
            return this;
        }

        /**
         * Sets the producer id of every producer made from this config; 0 disables idempotence.
         * Default: each producer draws its own random non-zero id (ids must not be shared).
         */
        public Builder producerId(long id) {
            check(
                    id >= 0 || id == AUTO_PRODUCER_ID,
                    "producerId must be >= 0 (or AUTO_PRODUCER_ID), got %s",
                    id);
            this.producerId = id;
            return this;
        }

        /** The partitioner factory; called once per producer. Default: round-robin. */
        public Builder partitioner(Supplier<NearstreamPartitioner> factory) {
            this.partitioner = Objects.requireNonNull(factory, "partitioner");
            return this;
        }

        /** A stateless (or thread-safe) partitioner, shared as is. */
        public Builder partitioner(NearstreamPartitioner partitioner) {
            Objects.requireNonNull(partitioner, "partitioner");
            this.partitioner = () -> partitioner;
            return this;
        }

        public NearstreamProducerConfig build() {
            check(!stream.isEmpty(), "stream must not be empty%s", "");
            check(
                    batchSizeBytes <= maxRequestBytes,
                    "batchSizeBytes (%s) must not exceed maxRequestBytes",
                    batchSizeBytes);
            check(
                    bufferMemoryBytes >= batchSizeBytes,
                    "bufferMemoryBytes must be at least batchSizeBytes (%s)",
                    batchSizeBytes);
            return new NearstreamProducerConfig(this);
        }

        private static void check(boolean ok, String format, Object value) {
            if (!ok) {
                throw new IllegalArgumentException(String.format(format, value));
            }
        }
    }
}
