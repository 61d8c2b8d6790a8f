package io.nearstream.client;

/**
 * Batches records into chunks on its caller's thread, without locks or atomic operations, and hands
 * each full chunk to its producer; for a caller confined to one thread that can call {@link
 * #handOverAll()} every {@code linger.ms} itself, as a Flink sink writer does from its task's
 * mailbox. Get one from {@link BatchingProducer#newRecordBatcher()}.
 *
 * <p>Why: {@link BatchingProducer#send} takes the streamlet's append lock on every record, and a
 * lock (or any atomic read-modify-write) is a full memory fence: the sending thread waits there for
 * its own stores, the record it just built, to drain to the cache. For a Flink task that builds and
 * sends millions of records a second that was about a sixth of the task's CPU. A batcher pays for
 * synchronisation once per chunk instead.
 *
 * <p>What changes for the caller: the producer's sender does not see a chunk until it is full or
 * {@link #handOverAll()} hands it over, so {@code linger.ms} is the caller's to keep; a chunk's
 * buffer memory is taken when it is handed over (then {@code send} may block up to {@code
 * max.block}), so each batcher holds at most one chunk per streamlet beyond {@code buffer.memory}.
 * The producer's {@link BatchingProducer#flush()}, its transaction methods and {@code close()} hand
 * over or discard what the batcher holds, and so must run on the batcher's thread. Records sent to
 * one streamlet through a batcher are stored in the order sent; records sent to the same streamlet
 * through the producer directly may come between its chunks.
 *
 * <p>Not thread-safe.
 */
public final class RecordBatcher {

    private final BatchingProducer producer;
    private final NearstreamPartitioner partitioner;
    private final OpenChunk[] open;
    private final int batchSizeBytes;

    /**
     * How far a chunk may grow past {@code batch.size} while its streamlet's last one is on its
     * way.
     */
    private final int grownChunkBytes;

    private final long bufferMemoryBytes;

    RecordBatcher(
            BatchingProducer producer,
            int streamlets,
            int segmentBytes,
            NearstreamPartitioner partitioner) {
        this.producer = producer;
        this.partitioner = partitioner;
        NearstreamProducerConfig config = producer.config();
        this.batchSizeBytes = config.batchSizeBytes();
        this.bufferMemoryBytes = config.bufferMemoryBytes();
        this.grownChunkBytes = grownChunkBytes(config, segmentBytes);
        this.open = new OpenChunk[streamlets];
        for (int i = 0; i < streamlets; i++) {
            open[i] = new OpenChunk(Math.min(batchSizeBytes, 1 << 20));
        }
    }

    /**
     * As {@link BatchingProducer#send(byte[], byte[], long, SendCallback)}: the producer's
     * partitioner picks the streamlet from the key (may be null).
     */
    public void send(byte[] key, byte[] value, long timestampMs, SendCallback callback) {
        sendTo(partitioner.streamlet(key, value, open.length), value, timestampMs, callback);
    }

    /** As {@link BatchingProducer#sendTo(int, byte[], long, SendCallback)}. */
    public void sendTo(int streamlet, byte[] value, long timestampMs, SendCallback callback) {
        producer.checkOpen();
        NearstreamClientException refused = producer.refusal(streamlet, value);
        if (refused != null) {
            BatchingProducer.reportFailed(callback, refused);
            return;
        }
        long need = (long) value.length + Chunks.RECORD_PREFIX_BYTES;
        OpenChunk chunk = open[streamlet];
        if (chunk.wouldExceed(value.length, grownChunkBytes)
                || (!chunk.isEmpty() && chunk.bytes() + need > bufferMemoryBytes)) {
            producer.handOver(streamlet, chunk);
        }
        chunk.add(value, timestampMs, callback);
        int size = chunk.builder.size();
        if (size >= batchSizeBytes
                && (size >= grownChunkBytes || !producer.hasPendingChunks(streamlet))) {
            producer.handOver(streamlet, chunk);
        }
    }

    /**
     * A chunk that reached {@code batch.size} while its streamlet's previous chunk is still on its
     * way keeps growing, up to 16 times {@code batch.size} (at most 1 MiB, half a segment and
     * {@code max.request.bytes}): only one chunk per streamlet is in flight, so when the broker
     * answers slower than records come, fixed-size chunks would make the streamlet's throughput one
     * {@code batch.size} per round trip. Larger chunks under load keep it at what the broker can
     * take, as natural batching does in Aeron or the LMAX Disruptor.
     */
    private static int grownChunkBytes(NearstreamProducerConfig config, int segmentBytes) {
        long grown = Math.min(16L * config.batchSizeBytes(), 1 << 20);
        grown = Math.min(grown, config.maxRequestBytes());
        if (segmentBytes > 0) {
            grown = Math.min(grown, segmentBytes / 2);
        }
        return (int) Math.max(grown, config.batchSizeBytes());
    }

    /** Hands every chunk being filled to the producer: call it every {@code linger.ms}. */
    public void handOverAll() {
        for (int i = 0; i < open.length; i++) {
            if (!open[i].isEmpty()) {
                producer.handOver(i, open[i]);
            }
        }
    }

    /** Whether the batcher holds no record. */
    public boolean isEmpty() {
        for (OpenChunk chunk : open) {
            if (!chunk.isEmpty()) {
                return false;
            }
        }
        return true;
    }

    /** Fails every record the batcher holds with {@code reason}. */
    void discard(NearstreamClientException reason) {
        for (OpenChunk chunk : open) {
            if (!chunk.isEmpty()) {
                BatchingProducer.failUnsent(chunk, reason);
            }
        }
    }
}
