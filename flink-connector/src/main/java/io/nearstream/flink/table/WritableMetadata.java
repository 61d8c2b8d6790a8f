package io.nearstream.flink.table;

import org.apache.flink.annotation.Internal;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.types.DataType;

/**
 * The metadata columns a {@code nearstream} table can write: the record's timestamp (stored for a
 * chunk's first record; NULL takes the time its chunk starts) and the streamlet to write it to
 * (NULL: chosen by the key, or spread over the streamlets without one).
 */
@Internal
enum WritableMetadata {
    TIMESTAMP("timestamp", DataTypes.TIMESTAMP_WITH_LOCAL_TIME_ZONE(3).nullable()),
    STREAMLET("streamlet", DataTypes.INT().nullable());

    final String key;
    final DataType type;

    WritableMetadata(String key, DataType type) {
        this.key = key;
        this.type = type;
    }

    static WritableMetadata of(String key) {
        for (WritableMetadata m : values()) {
            if (m.key.equals(key)) {
                return m;
            }
        }
        throw new IllegalArgumentException("No writable metadata '" + key + "'");
    }
}
