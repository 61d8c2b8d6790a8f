package io.nearstream.client;

import java.io.Serializable;

/**
 * One split of a push ring: the streamlet and the chunk position the broker starts pushing at.
 * Serializable because the Flink connector relays it between source readers in Flink's events.
 */
public record PushSplitStart(int streamlet, Position start) implements Serializable {

    /** Bytes on the wire: u32 streamlet + Position. */
    static final int WIRE_BYTES = 4 + Position.WIRE_BYTES;
}
