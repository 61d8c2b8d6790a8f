package io.nearstream.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.annotation.Nullable;

/**
 * Reads assigned streamlets of a stream with long-poll fetch requests: one request per poll carries
 * every assigned streamlet, and each streamlet continues at the {@code next} position the broker
 * returned, across segments and groups, with no other RPC.
 *
 * <p>{@link #position(int)} is what to commit: the next chunk plus how many of its records were
 * already returned; {@link #seek} or a {@link StartingPosition#at(ReadPosition)} resumes there. A
 * position the broker no longer holds ({@code POSITION_OUT_OF_RANGE}) is reported, never skipped
 * silently. Transport failures are retried on the next poll.
 *
 * <pre>{@code
 * try (NearstreamPullConsumer consumer =
 *         NearstreamPullConsumer.builder("127.0.0.1:7420", "clicks").build()) {
 *     consumer.assign(Map.of(0, StartingPosition.earliest(), 1, StartingPosition.latest()));
 *     while (running) {
 *         for (NearstreamRecord r : consumer.poll(Duration.ofMillis(500))) {
 *             process(r.value());
 *         }
 *         commit(consumer.position(0), consumer.position(1));
 *     }
 * }
 * }</pre>
 *
 * <p>Not thread-safe: one thread polls.
 */
public final class NearstreamPullConsumer implements AutoCloseable {

    private final NearstreamClient client;
    private final boolean ownsClient;
    private final String stream;
    private final int maxBytesPerStreamlet;
    private final Duration maxWait;
    private final Duration requestTimeout;
    private final ChunkCursor cursor;
    @Nullable private final FollowerReads followerReads;

    /** Assigned streamlets in ascending order. */
    private final Map<Integer, StreamletCursor> assigned = new TreeMap<>();

    private boolean closed;

    private NearstreamPullConsumer(Builder b) {
        this.stream = b.stream;
        if (b.client != null) {
            this.client = b.client;
            this.ownsClient = false;
        } else {
            this.client = NearstreamClient.connect(b.address, b.clientOptions);
            this.ownsClient = true;
        }
        this.maxBytesPerStreamlet = b.maxBytesPerStreamlet;
        this.maxWait = b.maxWait;
        this.requestTimeout = b.clientOptions.requestTimeout();
        this.cursor = new ChunkCursor(b.verifyChecksums);
        this.followerReads = b.followerReads;
    }

    /**
     * A consumer with its own connection to {@code address}: one broker's {@code HOST:PORT}, or a
     * cluster's comma-separated bootstrap list ({@link NearstreamClient#connect}).
     */
    public static Builder builder(String address, String stream) {
        return new Builder(Objects.requireNonNull(address, "address"), null, stream);
    }

    /** A consumer on an existing client (not closed by the consumer). */
    public static Builder builder(NearstreamClient client, String stream) {
        return new Builder(null, Objects.requireNonNull(client, "client"), stream);
    }

    /** Reads {@code streamlet} too, starting at {@code start}; replaces an earlier assignment. */
    public void assign(int streamlet, StartingPosition start) {
        checkOpen();
        if (streamlet < 0) {
            throw new IllegalArgumentException("negative streamlet " + streamlet);
        }
        assigned.put(streamlet, new StreamletCursor(streamlet, Objects.requireNonNull(start)));
    }

    /** Reads these streamlets (in addition to those assigned before). */
    public void assign(Map<Integer, StartingPosition> starts) {
        starts.forEach(this::assign);
    }

    /** Stops reading {@code streamlet}. */
    public void unassign(int streamlet) {
        assigned.remove(streamlet);
    }

    /** The assigned streamlets. */
    public Set<Integer> assignment() {
        return Collections.unmodifiableSet(assigned.keySet());
    }

    /**
     * Continues {@code streamlet} at the chunk at {@code chunk} (all-zero = earliest), skipping its
     * first {@code recordsToSkip} records.
     */
    public void seek(int streamlet, Position chunk, int recordsToSkip) {
        assign(streamlet, StartingPosition.at(chunk, recordsToSkip));
    }

    /**
     * The position of the next record {@link #poll} would return for {@code streamlet}; resolves a
     * pending LATEST or timestamp start with one request.
     */
    public ReadPosition position(int streamlet) {
        StreamletCursor c = assigned.get(streamlet);
        if (c == null) {
            throw new IllegalStateException("streamlet " + streamlet + " is not assigned");
        }
        resolveStarts();
        return new ReadPosition(c.position, c.skip);
    }

    /** The tail the broker reported in the last fetch of {@code streamlet} (all-zero before). */
    public Position lastTail(int streamlet) {
        StreamletCursor c = assigned.get(streamlet);
        return c == null ? Position.EARLIEST : c.tail;
    }

    /**
     * Returns the records that arrived, waiting up to {@code timeout} for some; an empty list when
     * none did (or the broker could not be reached — the next poll retries).
     *
     * @throws NearstreamClientException on a fatal broker answer, e.g. {@link
     *     StatusCode#POSITION_OUT_OF_RANGE} for a position removed by retention, or {@link
     *     StatusCode#STREAM_NOT_FOUND}
     */
    public List<NearstreamRecord> poll(Duration timeout) {
        checkOpen();
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            List<NearstreamRecord> records = pollOnce(deadline);
            long left = deadline - System.nanoTime();
            if (!records.isEmpty() || left <= 0) {
                return records;
            }
        }
    }

    private List<NearstreamRecord> pollOnce(long deadline) {
        if (assigned.isEmpty()) {
            sleepUntil(deadline);
            return List.of();
        }
        long leftMs = Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
        try {
            resolveStarts();
        } catch (NearstreamClientException e) {
            if (!e.isRetriable()) {
                throw e;
            }
            backOff(deadline);
            return List.of();
        }
        List<FetchEntry> entries = new ArrayList<>(assigned.size());
        for (StreamletCursor c : assigned.values()) {
            entries.add(new FetchEntry(c.streamlet, c.position, maxBytesPerStreamlet));
        }
        int waitMs = (int) Math.min(maxWait.toMillis(), leftMs);
        FetchResponse response;
        try {
            response =
                    await(
                            followerReads == null
                                    ? client.fetch(stream, waitMs, entries)
                                    : client.fetch(stream, waitMs, entries, followerReads),
                            waitMs + requestTimeout.toMillis() + 1_000);
        } catch (NearstreamClientException e) {
            if (!e.isRetriable()) {
                throw e;
            }
            backOff(deadline);
            return List.of();
        }
        try {
            return read(response);
        } finally {
            response.close();
        }
    }

    /**
     * Reads a response whole before changing any position: when one entry fails (an error status, a
     * corrupt chunk) nothing is consumed, so no record is lost by throwing.
     */
    private List<NearstreamRecord> read(FetchResponse response) {
        List<NearstreamRecord> records = new ArrayList<>();
        List<Runnable> advances = new ArrayList<>();
        for (StreamletFetch result : response.results()) {
            StreamletCursor c = assigned.get(result.streamlet());
            if (c == null) {
                continue;
            }
            if (!result.ok()) {
                if (result.status().isRetriable()) {
                    continue;
                }
                throw new NearstreamClientException(
                        result.status(),
                        "stream "
                                + stream
                                + " streamlet "
                                + result.streamlet()
                                + " at "
                                + c.position
                                + ": "
                                + result.message());
            }
            boolean first = true;
            for (ChunkBlock block : result.blocks()) {
                cursor.reset(block);
                while (cursor.nextChunk()) {
                    Position at = cursor.position();
                    long ts = cursor.header().firstTimestampMs();
                    if (first) {
                        // A fetch starts at the requested chunk: skip what was returned before.
                        cursor.skipRecords(c.skip);
                        first = false;
                    }
                    while (cursor.nextRecord()) {
                        records.add(
                                new NearstreamRecord(
                                        c.streamlet,
                                        at,
                                        cursor.recordIndex(),
                                        ts,
                                        cursor.copyRecord()));
                    }
                }
            }
            boolean gotChunks = !first;
            Position next = result.next();
            Position tail = result.tail();
            advances.add(
                    () -> {
                        c.tail = tail;
                        if (gotChunks) {
                            c.skip = 0;
                        }
                        // An empty answer to "earliest" on a streamlet without data stays earliest.
                        if (gotChunks || !next.isEarliest()) {
                            c.position = next;
                        }
                    });
        }
        advances.forEach(Runnable::run);
        return records;
    }

    /** Turns pending LATEST / timestamp starts into positions: one request per kind. */
    private void resolveStarts() {
        List<Integer> latest = new ArrayList<>();
        Map<Integer, Long> byTime = new LinkedHashMap<>();
        for (StreamletCursor c : assigned.values()) {
            if (c.pending == null) {
                continue;
            }
            switch (c.pending.kind()) {
                case LATEST:
                    latest.add(c.streamlet);
                    break;
                case TIMESTAMP:
                    byTime.put(c.streamlet, c.pending.timestampMs());
                    break;
                default:
                    throw new AssertionError(c.pending);
            }
        }
        if (!latest.isEmpty()) {
            int[] ids = latest.stream().mapToInt(Integer::intValue).toArray();
            List<StreamletMetadata> md =
                    await(client.metadata(stream, ids), requestTimeout.toMillis() + 1_000);
            for (StreamletMetadata m : md) {
                StreamletCursor c = assigned.get(m.streamlet());
                if (c != null) {
                    c.resolved(m.tail());
                }
            }
        }
        if (!byTime.isEmpty()) {
            List<TimestampLookup> found =
                    await(
                            client.lookupTimestamps(stream, byTime),
                            requestTimeout.toMillis() + 1_000);
            for (TimestampLookup l : found) {
                if (!l.status().equals(StatusCode.OK)) {
                    throw new NearstreamClientException(
                            l.status(), "streamlet " + l.streamlet() + ": " + l.message());
                }
                StreamletCursor c = assigned.get(l.streamlet());
                if (c != null) {
                    c.resolved(l.position());
                }
            }
        }
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            if (ownsClient) {
                client.close();
            }
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the consumer is closed");
        }
    }

    private static <T> T await(Future<T> f, long timeoutMs) {
        try {
            return f.get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            f.cancel(false);
            throw new NearstreamClientException(StatusCode.IO_ERROR, "interrupted", e);
        } catch (TimeoutException e) {
            f.cancel(false);
            throw new NearstreamClientException(StatusCode.IO_ERROR, "no answer in time", e);
        } catch (ExecutionException e) {
            Throwable t = e.getCause();
            while (t instanceof CompletionException && t.getCause() != null) {
                t = t.getCause();
            }
            if (t instanceof NearstreamClientException nce) {
                throw nce;
            }
            throw new NearstreamClientException(StatusCode.IO_ERROR, String.valueOf(t), t);
        }
    }

    private static void backOff(long deadline) {
        long until = Math.min(deadline, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(100));
        sleepUntil(until);
    }

    private static void sleepUntil(long deadline) {
        long nanos = deadline - System.nanoTime();
        if (nanos > 0) {
            try {
                TimeUnit.NANOSECONDS.sleep(nanos);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Read state of one streamlet. */
    private static final class StreamletCursor {
        final int streamlet;

        /** A start still to resolve with an RPC (LATEST, TIMESTAMP), or null. */
        StartingPosition pending;

        Position position = Position.EARLIEST;
        int skip;
        Position tail = Position.EARLIEST;

        StreamletCursor(int streamlet, StartingPosition start) {
            this.streamlet = streamlet;
            switch (start.kind()) {
                case EARLIEST:
                    break;
                case EXACT:
                    position = start.exact().chunk();
                    skip = start.exact().recordsToSkip();
                    break;
                default:
                    pending = start;
            }
        }

        void resolved(Position p) {
            position = p;
            skip = 0;
            pending = null;
        }
    }

    /** Builder of {@link NearstreamPullConsumer}. */
    public static final class Builder {
        private final String address;
        private final NearstreamClient client;
        private final String stream;
        private NearstreamClientOptions clientOptions = NearstreamClientOptions.DEFAULTS;
        private int maxBytesPerStreamlet = 1024 * 1024;
        private Duration maxWait = Duration.ofMillis(500);
        private boolean verifyChecksums = true;
        private FollowerReads followerReads;

        private Builder(String address, NearstreamClient client, String stream) {
            this.address = address;
            this.client = client;
            this.stream = Objects.requireNonNull(stream, "stream");
        }

        public Builder clientOptions(NearstreamClientOptions options) {
            this.clientOptions = Objects.requireNonNull(options);
            return this;
        }

        /** Chunk bytes per streamlet and fetch (at least one chunk is always returned). */
        public Builder maxBytesPerStreamlet(int bytes) {
            if (bytes < 1) {
                throw new IllegalArgumentException(
                        "maxBytesPerStreamlet must be >= 1, got " + bytes);
            }
            this.maxBytesPerStreamlet = bytes;
            return this;
        }

        /** Longest wait of one long-poll fetch when there is nothing new. */
        public Builder maxWait(Duration maxWait) {
            if (maxWait.isNegative()) {
                throw new IllegalArgumentException("maxWait must not be negative, got " + maxWait);
            }
            this.maxWait = maxWait;
            return this;
        }

        /** Whether to check every chunk's payload CRC32C (headers are always checked). */
        public Builder verifyChecksums(boolean verify) {
            this.verifyChecksums = verify;
            return this;
        }

        /**
         * Over a cluster, fetches each streamlet from the broker {@code reads} picks for it (an
         * in-sync follower, as a replica read; docs/cluster.md, "Follower reads"), and from its
         * leader while that follower does not serve it ({@link FollowerReads}). By default every
         * streamlet is fetched from its leader.
         */
        public Builder followerReads(FollowerReads reads) {
            this.followerReads = Objects.requireNonNull(reads, "reads");
            return this;
        }

        public NearstreamPullConsumer build() {
            if (stream.isEmpty()) {
                throw new IllegalArgumentException("stream must not be empty");
            }
            return new NearstreamPullConsumer(this);
        }
    }
}
