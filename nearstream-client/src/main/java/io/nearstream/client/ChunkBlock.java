package io.nearstream.client;

import java.nio.ByteBuffer;

/**
 * Consecutive whole chunks returned by a fetch; {@code at} is the position of the first one. The
 * buffer is a read-only little-endian view into the fetch response and is valid until the {@link
 * FetchResponse} is closed.
 */
public record ChunkBlock(Position at, ByteBuffer data) {}
