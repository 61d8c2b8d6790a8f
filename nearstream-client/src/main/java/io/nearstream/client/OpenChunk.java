package io.nearstream.client;

import java.util.ArrayList;
import java.util.List;

/**
 * The chunk a streamlet is filling: its records, each record's {@link
 * java.util.concurrent.CompletableFuture} or {@link SendCallback}, when its first record came and
 * that record's timestamp. Not thread-safe: the producer guards it with the streamlet's append
 * lock, a {@link RecordBatcher} confines it to its thread.
 */
final class OpenChunk {

    final ChunkBuilder builder;

    /** Per record: its CompletableFuture or SendCallback. */
    List<Object> completions = new ArrayList<>();

    /** {@link System#nanoTime()} at the first record: its linger and delivery timeout count. */
    long createdNanos;

    /** The first record's timestamp: the chunk header's {@code first_timestamp_ms}. */
    long firstTimestampMs;

    OpenChunk(int initialCapacity) {
        this.builder = new ChunkBuilder(initialCapacity);
    }

    boolean isEmpty() {
        return builder.isEmpty();
    }

    /** Whether a record of {@code length} bytes would take a non-empty chunk over {@code limit}. */
    boolean wouldExceed(int length, int limit) {
        return !builder.isEmpty() && builder.sizeWith(length) > limit;
    }

    /**
     * Adds a record with its timestamp or {@link BatchingProducer#NO_TIMESTAMP}; returns whether it
     * is the chunk's first.
     */
    boolean add(byte[] value, long timestampMs, Object completion) {
        boolean first = builder.isEmpty();
        if (first) {
            createdNanos = System.nanoTime();
            firstTimestampMs =
                    timestampMs == BatchingProducer.NO_TIMESTAMP
                            ? System.currentTimeMillis()
                            : timestampMs;
        }
        builder.add(value);
        completions.add(completion);
        return first;
    }

    /**
     * Buffer memory the records take: their bytes and length prefixes, the chunk less its header.
     */
    long bytes() {
        return builder.size() - Chunks.HEADER_BYTES;
    }

    /**
     * Starts the next chunk, keeping the builder's buffer; the completion list is a new one (the
     * sealed chunk keeps the old), sized for as many records as the last chunk had.
     */
    void reset() {
        int records = completions.size();
        builder.reset();
        completions = new ArrayList<>(Math.max(10, records));
    }
}
