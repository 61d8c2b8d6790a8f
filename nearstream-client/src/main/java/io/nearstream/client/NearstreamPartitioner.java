package io.nearstream.client;

/**
 * Chooses the streamlet of a produced record.
 *
 * <pre>{@code
 * NearstreamProducerConfig.builder("127.0.0.1:7420", "clicks")
 *         .partitioner(NearstreamPartitioner.keyHash())
 *         .build();
 * }</pre>
 */
@FunctionalInterface
public interface NearstreamPartitioner {

    /**
     * @param key the record's key, or {@code null}
     * @return a streamlet in {@code [0, streamlets)}
     */
    int streamlet(byte[] key, byte[] value, int streamlets);

    /**
     * Record after record over all streamlets, keys ignored. The counter is a plain field, not an
     * atomic one: an atomic increment is a full memory fence on every record, which waits for the
     * caller's own stores (the record it just built) to drain and was a measurable share of a
     * producer's send. Threads sending at once may therefore see the same count now and then: the
     * spread stays even, it is just not a strict rotation.
     */
    static NearstreamPartitioner roundRobin() {
        return new NearstreamPartitioner() {
            private int next;

            @Override
            public int streamlet(byte[] key, byte[] value, int streamlets) {
                int n = next;
                next = n + 1;
                return Math.floorMod(n, streamlets);
            }
        };
    }

    /**
     * The same key always to the same streamlet: Kafka's murmur2 hash of the key (stable across
     * JVMs and versions); records without a key go round-robin.
     */
    static NearstreamPartitioner keyHash() {
        NearstreamPartitioner fallback = roundRobin();
        return (key, value, streamlets) ->
                key == null
                        ? fallback.streamlet(null, value, streamlets)
                        : (murmur2(key) & 0x7fffffff) % streamlets;
    }

    /** Kafka's 32-bit murmur2 (seed 0x9747b28c), as used by its default partitioner. */
    static int murmur2(byte[] data) {
        int length = data.length;
        int seed = 0x9747b28c;
        final int m = 0x5bd1e995;
        final int r = 24;
        int h = seed ^ length;
        int length4 = length / 4;
        for (int i = 0; i < length4; i++) {
            final int i4 = i * 4;
            int k =
                    (data[i4] & 0xff)
                            + ((data[i4 + 1] & 0xff) << 8)
                            + ((data[i4 + 2] & 0xff) << 16)
                            + ((data[i4 + 3] & 0xff) << 24);
            k *= m;
            k ^= k >>> r;
            k *= m;
            h *= m;
            h ^= k;
        }
        switch (length % 4) {
            case 3:
                h ^= (data[(length & ~3) + 2] & 0xff) << 16;
            // fall through
            case 2:
                h ^= (data[(length & ~3) + 1] & 0xff) << 8;
            // fall through
            case 1:
                h ^= data[length & ~3] & 0xff;
                h *= m;
                break;
            default:
                break;
        }
        h ^= h >>> 13;
        h *= m;
        h ^= h >>> 15;
        return h;
    }
}
