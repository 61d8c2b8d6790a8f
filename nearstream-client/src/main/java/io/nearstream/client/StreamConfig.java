package io.nearstream.client;

/**
 * A stream's configuration (CreateStream / DescribeStream). Zero for {@code segmentBytes}, {@code
 * segmentsPerGroup} or {@code activeGroups} asks for the broker's default; -1 retention means
 * unlimited.
 */
public record StreamConfig(
        String name,
        int streamlets,
        int segmentBytes,
        int segmentsPerGroup,
        int activeGroups,
        Durability durability,
        long retentionBytes,
        long retentionMs) {

    /** A stream with broker defaults, no retention limit, durability {@link Durability#NONE}. */
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
                retentionMs);
    }
}
