package io.nearstream.flink.table;

import io.nearstream.client.NearstreamRecord;
import org.apache.flink.annotation.Internal;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.DataType;

/**
 * The metadata columns a {@code nearstream} table can read ({@code METADATA FROM 'key'}). A record
 * sits in a chunk: its position is the chunk's (the value {@code scan.startup.specific-positions}
 * takes) plus its index inside the chunk, and its timestamp is the chunk's first record's, which is
 * the only one the broker stores.
 */
@Internal
enum ReadableMetadata {
    STREAMLET("streamlet", DataTypes.INT().notNull()) {
        @Override
        Object read(NearstreamRecord r) {
            return r.streamlet();
        }
    },
    POSITION("position", DataTypes.STRING().notNull()) {
        @Override
        Object read(NearstreamRecord r) {
            return StringData.fromString(r.chunk().toString());
        }
    },
    INDEX("index", DataTypes.INT().notNull()) {
        @Override
        Object read(NearstreamRecord r) {
            return r.index();
        }
    },
    TIMESTAMP("timestamp", DataTypes.TIMESTAMP_WITH_LOCAL_TIME_ZONE(3).notNull()) {
        @Override
        Object read(NearstreamRecord r) {
            return TimestampData.fromEpochMillis(r.chunkTimestampMs());
        }
    };

    final String key;
    final DataType type;

    ReadableMetadata(String key, DataType type) {
        this.key = key;
        this.type = type;
    }

    /** The column's value in Flink's internal data structures. */
    abstract Object read(NearstreamRecord record);

    static ReadableMetadata of(String key) {
        for (ReadableMetadata m : values()) {
            if (m.key.equals(key)) {
                return m;
            }
        }
        throw new IllegalArgumentException("No readable metadata '" + key + "'");
    }
}
