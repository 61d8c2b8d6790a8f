package io.nearstream.client;

/**
 * A record read by {@link NearstreamPullConsumer}: its value, streamlet, the position of its chunk,
 * its index inside the chunk and the chunk's (first record's) timestamp.
 */
public record NearstreamRecord(
        int streamlet, Position chunk, int index, long chunkTimestampMs, byte[] value) {}
