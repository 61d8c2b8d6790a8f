package io.nearstream.flink.source.reader;

import io.nearstream.client.ChunkCursor;
import io.nearstream.client.NearstreamRecord;
import io.nearstream.client.Position;
import io.nearstream.client.RecordFilter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;

/**
 * Consecutive records of one chunk of one split: the element a split reader hands the source
 * reader, which passes it to {@link NearstreamRecordEmitter} in one call.
 *
 * <p>Why runs and not single records: {@code SourceReaderBase} pays a fixed cost per element (its
 * poll loop, the operator's emit and availability checks, the records-in counter), which at tens of
 * millions of records per second is a large share of a task thread. A run pays it once per chunk.
 * Checkpoints stay exact: a checkpoint can only be taken between two elements, so after a whole
 * run, and the emitter advances the split state past each run it emitted ("this chunk, n records
 * done").
 *
 * <p>Values are read with {@link #value(int)} while the batch holding the run is not yet recycled
 * (a push run reads them from its shared-memory slot).
 */
@Internal
public abstract class RecordRun {

    private final int streamlet;
    private final Position chunk;
    private final long chunkTimestampMs;
    private final int firstIndex;
    private final int size;

    protected RecordRun(
            int streamlet, Position chunk, long chunkTimestampMs, int firstIndex, int size) {
        if (firstIndex < 0 || size < 0) {
            throw new IllegalArgumentException(
                    "a run needs firstIndex >= 0 and size >= 0, got " + firstIndex + ", " + size);
        }
        this.streamlet = streamlet;
        this.chunk = chunk;
        this.chunkTimestampMs = chunkTimestampMs;
        this.firstIndex = firstIndex;
        this.size = size;
    }

    public final int streamlet() {
        return streamlet;
    }

    /** Where the run's chunk starts in its streamlet. */
    public final Position chunk() {
        return chunk;
    }

    /** The chunk's first-record timestamp, the event timestamp of every record of the run. */
    public final long chunkTimestampMs() {
        return chunkTimestampMs;
    }

    /** Index inside the chunk of the run's first record. */
    public final int firstIndex() {
        return firstIndex;
    }

    /** Records in the run. */
    public final int size() {
        return size;
    }

    /**
     * The value of the run's record {@code i} ({@code 0 <= i < size()}) as an array its caller may
     * keep: a push run copies it out of the slot on every call; a pull run returns the copy its
     * fetcher made (the emitter asks for each value once).
     */
    public abstract byte[] value(int i);

    /** The run's record {@code i} as the client's record type (its value copied). */
    public final NearstreamRecord record(int i) {
        return new NearstreamRecord(streamlet, chunk, firstIndex + i, chunkTimestampMs, value(i));
    }

    /**
     * Copies the records of {@code cursor}'s current chunk, after the first {@code skip}, into a
     * run of their own; null when none are left. Leaves the cursor at the chunk's end.
     */
    @Nullable
    public static RecordRun copyChunk(ChunkCursor cursor, int streamlet, int skip) {
        Position at = cursor.position();
        long timestamp = cursor.header().firstTimestampMs();
        int skipped = cursor.skipRecords(skip);
        byte[][] values = new byte[cursor.recordCount() - skipped][];
        int n = 0;
        while (cursor.nextRecord()) {
            values[n++] = cursor.copyRecord();
        }
        return n > 0 ? new OnHeap(streamlet, at, timestamp, skipped, values) : null;
    }

    /**
     * {@link #copyChunk(ChunkCursor, int, int)} keeping only the records that pass {@code filter};
     * {@code skip} and the run's indexes count the chunk's passing records, as a push slot's rows
     * do. Null when none are left, a chunk none of whose records pass included.
     */
    @Nullable
    public static RecordRun copyChunk(
            ChunkCursor cursor, int streamlet, int skip, RecordFilter filter) {
        if (filter.passesAll()) {
            return copyChunk(cursor, streamlet, skip);
        }
        Position at = cursor.position();
        long timestamp = cursor.header().firstTimestampMs();
        List<byte[]> values = new ArrayList<>();
        // Each record is matched in one buffer and copied out only when it is kept: a selective
        // filter leaves no garbage behind for the records it drops.
        byte[] scratch = new byte[0];
        int passed = 0;
        while (cursor.nextRecord()) {
            int length = cursor.recordLength();
            if (scratch.length < length) {
                scratch = new byte[Math.max(length, 2 * scratch.length)];
            }
            cursor.copyRecord(scratch, 0);
            if (filter.matches(scratch, 0, length) && passed++ >= skip) {
                values.add(Arrays.copyOf(scratch, length));
            }
        }
        return values.isEmpty()
                ? null
                : new OnHeap(
                        streamlet,
                        at,
                        timestamp,
                        passed - values.size(),
                        values.toArray(byte[][]::new));
    }

    /** A run whose values are already on the heap (pull mode copies them on the fetcher thread). */
    static final class OnHeap extends RecordRun {
        private final byte[][] values;

        OnHeap(
                int streamlet,
                Position chunk,
                long chunkTimestampMs,
                int firstIndex,
                byte[][] values) {
            super(streamlet, chunk, chunkTimestampMs, firstIndex, values.length);
            this.values = values;
        }

        @Override
        public byte[] value(int i) {
            return values[i];
        }
    }
}
