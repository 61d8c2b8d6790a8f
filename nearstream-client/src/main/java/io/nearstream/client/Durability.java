package io.nearstream.client;

/** Per-stream durability (docs/protocol.md, CreateStream). */
public enum Durability {
    /** Memory only; the stream does not survive a broker restart. */
    NONE,
    /** Segments written to files and fsync'd every flush interval. */
    ASYNC,
    /** fsync before an append is acknowledged. */
    SYNC
}
