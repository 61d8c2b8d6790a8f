package io.nearstream.client;

/**
 * A stream's configuration (CreateStream / DescribeStream). Zero for {@code segmentBytes}, {@code
 * segmentsPerGroup} or {@code activeGroups} asks for the broker's default; -1 retention means
 * unlimited.
 *
 * @param replication copies of each streamlet, each on its own broker, 1–3 (a {@code u8} on the
 *     wire); 0 in a CreateStream means 1. Above 1 only in a cluster, for a durable stream ({@link
 *     Durability#ASYNC} or {@link Durability#SYNC}). A DescribeStream answer always holds 1–3.
 */
public record StreamConfig(
        String name,
        int streamlets,
        int segmentBytes,
        int segmentsPerGroup,
        int activeGroups,
        Durability durability,
        long retentionBytes,
        long retentionMs,
        int replication) {

    /** The replication of a stream created without one: a single copy. */
    public static final int DEFAULT_REPLICATION = 1;

    /** The most copies a stream may have. */
    public static final int MAX_REPLICATION = 3;

    /** A configuration with {@link #DEFAULT_REPLICATION} (one copy of each streamlet). */
    public StreamConfig(
            String name,
            int streamlets,
            int segmentBytes,
            int segmentsPerGroup,
            int activeGroups,
            Durability durability,
            long retentionBytes,
            long retentionMs) {
        this(
                name,
                streamlets,
                segmentBytes,
                segmentsPerGroup,
                activeGroups,
                durability,
                retentionBytes,
                retentionMs,
                DEFAULT_REPLICATION);
    }

    /**
     * A stream with broker defaults, no retention limit, durability {@link Durability#NONE}, one
     * copy.
     */
    public static StreamConfig of(String name, int streamlets) {
        return new StreamConfig(name, streamlets, 0, 0, 0, Durability.NONE, -1, -1);
    }

    public StreamConfig withDurability(Durability d) {
        return new StreamConfig(
                name,
                streamlets,
                segmentBytes,
                segmentsPerGroup,
                activeGroups,
                d,
                retentionBytes,
                retentionMs,
                replication);
    }

    /**
     * This configuration with {@code copies} copies of each streamlet (1–3; 0 lets the broker
     * choose 1). The broker checks the rules; the client only refuses what the wire cannot carry
     * when it sends the request.
     */
    public StreamConfig withReplication(int copies) {
        return new StreamConfig(
                name,
                streamlets,
                segmentBytes,
                segmentsPerGroup,
                activeGroups,
                durability,
                retentionBytes,
                retentionMs,
                copies);
    }
}
