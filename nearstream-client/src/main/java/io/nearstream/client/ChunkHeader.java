package io.nearstream.client;

/**
 * The decoded 48-byte header of a chunk (docs/protocol.md, "Chunk format"). {@code payloadCrc} and
 * {@code recordCount} are u32 on the wire, held as Java ints.
 */
public record ChunkHeader(
        int payloadLength,
        int payloadCrc,
        long producerId,
        long sequence,
        long firstTimestampMs,
        int recordCount) {

    /** Bytes of the whole chunk: header plus payload. */
    public int totalSize() {
        return Chunks.HEADER_BYTES + payloadLength;
    }
}
