package io.nearstream.client;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Walks the chunks of a {@link ChunkBlock} and the records of each chunk without allocating per
 * record: {@link #record()} is one reused view whose position and limit are moved over the current
 * record.
 *
 * <pre>{@code
 * ChunkCursor cursor = new ChunkCursor();
 * for (ChunkBlock block : result.blocks()) {
 *     cursor.reset(block);
 *     while (cursor.nextChunk()) {
 *         Position at = cursor.position();          // (group, segment, offset) of this chunk
 *         long ts = cursor.header().firstTimestampMs();
 *         while (cursor.nextRecord()) {
 *             byte[] value = cursor.copyRecord();   // or read cursor.record() in place
 *         }
 *     }
 * }
 * }</pre>
 *
 * <p>Each chunk's header is checked (magic, version, CRC) and, unless disabled, its payload CRC and
 * record framing too; a bad chunk throws {@link NearstreamProtocolException} ({@link
 * StatusCode#CORRUPT_CHUNK}). Not thread-safe; the views are valid while the block's buffer is
 * (until its {@link FetchResponse} is closed).
 */
public final class ChunkCursor {

    private final boolean verifyPayload;

    private Position at = Position.EARLIEST;
    private ByteBuffer data; // little-endian duplicate of the block's data
    private ByteBuffer view; // read-only, the current record
    private int base;
    private int end;

    private int chunkStart = -1;
    private int nextChunkStart;
    private ChunkHeader header;
    private Position position;

    private int recordIndex = -1;
    private int recordCount;
    private int recordPos; // where the next record's length prefix is
    private int payloadEnd;
    private int recordStart;
    private int recordLength;

    /** A cursor with no block; call {@link #reset(ChunkBlock)}. Verifies payload CRCs. */
    public ChunkCursor() {
        this(true);
    }

    /**
     * @param verifyPayload whether to check each chunk's payload CRC32C and record framing before
     *     its records are read (headers are always checked, record lengths always bounds-checked)
     */
    public ChunkCursor(boolean verifyPayload) {
        this.verifyPayload = verifyPayload;
    }

    /** A cursor over {@code block}, verifying payload CRCs. */
    public ChunkCursor(ChunkBlock block) {
        this(true);
        reset(block);
    }

    /** Starts over at the first chunk of {@code block} (its data from position to limit). */
    public ChunkCursor reset(ChunkBlock block) {
        return reset(block.at(), block.data());
    }

    /**
     * Starts over at the chunks in {@code chunks} (position to limit), the first one at {@code at}.
     */
    public ChunkCursor reset(Position at, ByteBuffer chunks) {
        this.at = at;
        this.data = chunks.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        this.view = data.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
        this.base = chunks.position();
        this.end = chunks.limit();
        this.nextChunkStart = base;
        this.chunkStart = -1;
        this.header = null;
        this.position = null;
        this.recordIndex = -1;
        this.recordCount = 0;
        return this;
    }

    /**
     * Moves to the next chunk of the block.
     *
     * @return false when the block has no more chunks
     * @throws NearstreamProtocolException when the chunk is corrupt or does not fit in the block
     */
    public boolean nextChunk() {
        if (data == null || nextChunkStart >= end) {
            header = null;
            position = null;
            recordCount = 0;
            recordIndex = -1;
            return false;
        }
        ChunkHeader h = Chunks.parseHeader(data, nextChunkStart);
        if (h.totalSize() > end - nextChunkStart) {
            throw NearstreamProtocolException.corruptChunk(
                    "chunk at block offset "
                            + (nextChunkStart - base)
                            + " declares "
                            + h.totalSize()
                            + " bytes, the block has "
                            + (end - nextChunkStart)
                            + " left");
        }
        if (Integer.toUnsignedLong(h.recordCount())
                > h.payloadLength() / Chunks.RECORD_PREFIX_BYTES) {
            // Checked even without payload verification: readers size arrays by the count.
            throw NearstreamProtocolException.corruptChunk(
                    "chunk at block offset "
                            + (nextChunkStart - base)
                            + " declares "
                            + Integer.toUnsignedString(h.recordCount())
                            + " records, its "
                            + h.payloadLength()
                            + "-byte payload has room for at most "
                            + h.payloadLength() / Chunks.RECORD_PREFIX_BYTES);
        }
        if (verifyPayload) {
            Chunks.checkPayload(data, nextChunkStart, h);
        }
        chunkStart = nextChunkStart;
        nextChunkStart = chunkStart + h.totalSize();
        header = h;
        position = new Position(at.group(), at.segment(), at.offset() + (chunkStart - base));
        recordCount = h.recordCount();
        recordIndex = -1;
        recordPos = chunkStart + Chunks.HEADER_BYTES;
        payloadEnd = nextChunkStart;
        return true;
    }

    /**
     * The current chunk's position: the block's {@code at} with the chunk's offset in the block.
     */
    public Position position() {
        checkChunk();
        return position;
    }

    /** The current chunk's header. */
    public ChunkHeader header() {
        checkChunk();
        return header;
    }

    /** The current chunk's bytes (header and payload) as a read-only view. */
    public ByteBuffer chunk() {
        checkChunk();
        ByteBuffer b = data.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
        b.limit(nextChunkStart).position(chunkStart);
        return b.slice().order(ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * Moves to the next record of the current chunk.
     *
     * @return false after the chunk's last record
     */
    public boolean nextRecord() {
        checkChunk();
        if (recordIndex + 1 >= recordCount) {
            return false;
        }
        if (payloadEnd - recordPos < Chunks.RECORD_PREFIX_BYTES) {
            throw NearstreamProtocolException.corruptChunk(
                    "chunk at " + position + ": record " + (recordIndex + 1) + " is missing");
        }
        int len = data.getInt(recordPos);
        int start = recordPos + Chunks.RECORD_PREFIX_BYTES;
        if (len < 0 || len > payloadEnd - start) {
            throw NearstreamProtocolException.corruptChunk(
                    "chunk at "
                            + position
                            + ": record "
                            + (recordIndex + 1)
                            + " runs past the payload's end");
        }
        recordIndex++;
        recordStart = start;
        recordLength = len;
        recordPos = start + len;
        return true;
    }

    /**
     * Skips up to {@code n} records of the current chunk (e.g. those already emitted before a
     * resume); returns how many were skipped.
     */
    public int skipRecords(int n) {
        int skipped = 0;
        while (skipped < n && nextRecord()) {
            skipped++;
        }
        return skipped;
    }

    /** Records in the current chunk. */
    public int recordCount() {
        checkChunk();
        return recordCount;
    }

    /** Index of the current record inside its chunk (0-based). */
    public int recordIndex() {
        checkRecord();
        return recordIndex;
    }

    /** Byte length of the current record. */
    public int recordLength() {
        checkRecord();
        return recordLength;
    }

    /**
     * The current record as a read-only little-endian view from its position to its limit. The same
     * object is returned for every record: it is valid until the next cursor call.
     */
    public ByteBuffer record() {
        checkRecord();
        view.limit(recordStart + recordLength).position(recordStart);
        return view;
    }

    /** A copy of the current record. */
    public byte[] copyRecord() {
        checkRecord();
        byte[] out = new byte[recordLength];
        data.get(recordStart, out, 0, recordLength);
        return out;
    }

    /** Copies the current record into {@code dst} at {@code offset}; returns its length. */
    public int copyRecord(byte[] dst, int offset) {
        checkRecord();
        data.get(recordStart, dst, offset, recordLength);
        return recordLength;
    }

    private void checkChunk() {
        if (header == null) {
            throw new IllegalStateException("no current chunk: call nextChunk() first");
        }
    }

    private void checkRecord() {
        checkChunk();
        if (recordIndex < 0) {
            throw new IllegalStateException("no current record: call nextRecord() first");
        }
    }
}
