package io.nearstream.client;

/** One split of a push ring: the streamlet and the chunk position the broker starts pushing at. */
public record PushSplitStart(int streamlet, Position start) {

    /** Bytes on the wire: u32 streamlet + Position. */
    static final int WIRE_BYTES = 4 + Position.WIRE_BYTES;
}
