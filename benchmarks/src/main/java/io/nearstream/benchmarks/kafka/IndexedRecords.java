package io.nearstream.benchmarks.kafka;

/**
 * The content of benchmark records, for Nearstream ({@code PreloadedStream}) and Kafka alike: a
 * record carries its global index in its first 8 bytes (little-endian; fewer when the record is
 * shorter), the rest is a fixed pseudo-random pattern. So both brokers hold the same bytes, and a
 * reader can check which records it got.
 */
public final class IndexedRecords {

    private static final int INDEX_BYTES = 8;

    private IndexedRecords() {}

    /** A record of {@code recordBytes} bytes holding the pattern, its index not yet written. */
    public static byte[] template(int recordBytes) {
        if (recordBytes < 1) {
            throw new IllegalArgumentException("record size must be at least 1 byte");
        }
        byte[] record = new byte[recordBytes];
        long seed = 0x9E3779B97F4A7C15L;
        for (int i = 0; i < recordBytes; i++) {
            seed = seed * 6364136223846793005L + 1442695040888963407L;
            record[i] = (byte) (seed >>> 56);
        }
        return record;
    }

    /** Writes {@code index} into the record's first bytes. */
    public static void stamp(byte[] record, long index) {
        for (int i = 0; i < Math.min(INDEX_BYTES, record.length); i++) {
            record[i] = (byte) (index >>> (8 * i));
        }
    }

    /** The index a record carries (its low bytes only, when the record is shorter than 8). */
    public static long index(byte[] record) {
        long index = 0;
        for (int i = 0; i < Math.min(INDEX_BYTES, record.length); i++) {
            index |= (record[i] & 0xFFL) << (8 * i);
        }
        return index;
    }

    /** Whether the record is what {@link #stamp} wrote for {@code index} into a template. */
    public static boolean matches(byte[] record, long index, byte[] template) {
        long mask = record.length >= INDEX_BYTES ? -1L : (1L << (8 * record.length)) - 1;
        if (record.length != template.length || index(record) != (index & mask)) {
            return false;
        }
        for (int i = INDEX_BYTES; i < record.length; i++) {
            if (record[i] != template[i]) {
                return false;
            }
        }
        return true;
    }
}
