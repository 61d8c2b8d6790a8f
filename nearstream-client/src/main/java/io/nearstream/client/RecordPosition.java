package io.nearstream.client;

/**
 * Where a produced record was stored: its chunk's position in {@code streamlet} and its index
 * inside the chunk. {@code chunk} is all-zero when a retried chunk turned out to be stored already
 * and the broker no longer remembers where ({@link AppendResult#duplicate()}).
 */
public record RecordPosition(int streamlet, Position chunk, int index) {}
