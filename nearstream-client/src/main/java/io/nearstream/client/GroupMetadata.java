package io.nearstream.client;

/** One group of a streamlet as reported by the Metadata RPC. */
public record GroupMetadata(
        long groupId, boolean closed, long firstSegment, int segmentCount, long bytes) {}
