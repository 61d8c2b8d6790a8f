package io.nearstream.flink.table;

import io.nearstream.flink.sink.NearstreamRecordSerializationSchema;
import io.nearstream.flink.sink.NearstreamSinkContext;
import io.nearstream.flink.sink.NearstreamSinkRecord;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.utils.ProjectedRowData;

/**
 * Rows of a {@code nearstream} table as records: the value format encodes the value columns, the
 * key format (if any) the key columns, whose bytes choose the streamlet; the {@code timestamp} and
 * {@code streamlet} metadata columns, when the table declares them, set the record's timestamp and
 * streamlet.
 */
@Internal
final class RowDataRecordSerializer implements NearstreamRecordSerializationSchema<RowData> {

    private static final long serialVersionUID = 1L;

    @Nullable private final SerializationSchema<RowData> keyEncoder;
    private final int[] keyProjection;
    private final SerializationSchema<RowData> valueEncoder;
    private final int[] valueProjection;

    /** Where the metadata columns are in the consumed row, or -1. */
    private final int timestampIndex;

    private final int streamletIndex;

    RowDataRecordSerializer(
            @Nullable SerializationSchema<RowData> keyEncoder,
            int[] keyProjection,
            SerializationSchema<RowData> valueEncoder,
            int[] valueProjection,
            int timestampIndex,
            int streamletIndex) {
        this.keyEncoder = keyEncoder;
        this.keyProjection = keyProjection;
        this.valueEncoder = valueEncoder;
        this.valueProjection = valueProjection;
        this.timestampIndex = timestampIndex;
        this.streamletIndex = streamletIndex;
    }

    @Override
    public void open(
            SerializationSchema.InitializationContext context, NearstreamSinkContext sinkContext)
            throws Exception {
        if (keyEncoder != null) {
            keyEncoder.open(context);
        }
        valueEncoder.open(context);
    }

    @Nullable
    @Override
    public NearstreamSinkRecord serialize(
            RowData row, NearstreamSinkContext context, @Nullable Long timestamp) {
        byte[] value =
                valueEncoder.serialize(ProjectedRowData.from(valueProjection).replaceRow(row));
        byte[] key =
                keyEncoder == null
                        ? null
                        : keyEncoder.serialize(
                                ProjectedRowData.from(keyProjection).replaceRow(row));
        long timestampMs =
                timestampIndex >= 0 && !row.isNullAt(timestampIndex)
                        ? row.getTimestamp(timestampIndex, 3).getMillisecond()
                        : NearstreamSinkRecord.NO_TIMESTAMP;
        int streamlet =
                streamletIndex >= 0 && !row.isNullAt(streamletIndex)
                        ? row.getInt(streamletIndex)
                        : NearstreamSinkRecord.ANY_STREAMLET;
        return new NearstreamSinkRecord(key, value, streamlet, timestampMs);
    }
}
