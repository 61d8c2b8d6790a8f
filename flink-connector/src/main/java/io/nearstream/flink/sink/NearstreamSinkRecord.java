package io.nearstream.flink.sink;

import io.nearstream.client.BatchingProducer;
import java.util.Objects;
import javax.annotation.Nullable;
import org.apache.flink.annotation.PublicEvolving;

/**
 * One record as the sink writes it: its bytes, where it goes, and its timestamp (ms since the Unix
 * epoch; a chunk carries its first record's), or {@link #NO_TIMESTAMP}.
 *
 * @param key hashed to a streamlet with Kafka's murmur2 when {@code streamlet} is {@link
 *     #ANY_STREAMLET}; records with neither key nor streamlet go round-robin. Not stored: a
 *     Nearstream record is its value.
 * @param value the record's bytes
 * @param streamlet the streamlet to write to, or {@link #ANY_STREAMLET}
 */
@PublicEvolving
public record NearstreamSinkRecord(
        @Nullable byte[] key, byte[] value, int streamlet, long timestampMs) {

    /** The {@code streamlet} of a record whose streamlet is picked from its key (or none). */
    public static final int ANY_STREAMLET = -1;

    /**
     * The {@code timestampMs} of a record without one: a chunk that begins with it takes the time
     * it began. Cheaper than reading the clock for every record, since only a chunk's first
     * record's timestamp is stored.
     */
    public static final long NO_TIMESTAMP = BatchingProducer.NO_TIMESTAMP;

    public NearstreamSinkRecord {
        Objects.requireNonNull(value, "value");
        if (streamlet < ANY_STREAMLET) {
            throw new IllegalArgumentException("streamlet must be >= 0 (or ANY_STREAMLET)");
        }
    }

    /** The bytes the record costs on the wire before framing: for {@code numBytesOut}. */
    public int size() {
        return value.length + (key == null ? 0 : key.length);
    }
}
