package io.nearstream.flink.table;

import io.nearstream.flink.sink.NearstreamSink;
import io.nearstream.flink.sink.NearstreamSinkBuilder;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.Projection;
import org.apache.flink.table.connector.format.EncodingFormat;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.connector.sink.SinkV2Provider;
import org.apache.flink.table.connector.sink.abilities.SupportsWritingMetadata;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.DataType;

/**
 * A {@code nearstream} table written by {@code INSERT INTO}: the DataStream {@link NearstreamSink}
 * (none, at-least-once or exactly-once) with a row serializer built from the table's formats. The
 * value format decides which changes it can write (json, csv, raw and avro: inserts only).
 */
@Internal
final class NearstreamDynamicSink implements DynamicTableSink, SupportsWritingMetadata {

    /** What the factory decided; copied as is. */
    record Settings(
            String broker,
            String stream,
            DeliveryGuarantee deliveryGuarantee,
            @Nullable String transactionalIdPrefix,
            @Nullable Integer parallelism) {}

    private final DataType physicalDataType;
    @Nullable private final EncodingFormat<SerializationSchema<RowData>> keyFormat;
    private final EncodingFormat<SerializationSchema<RowData>> valueFormat;
    private final int[] keyProjection;
    private final int[] valueProjection;
    private final Settings settings;

    private List<String> metadataKeys = List.of();

    NearstreamDynamicSink(
            DataType physicalDataType,
            @Nullable EncodingFormat<SerializationSchema<RowData>> keyFormat,
            EncodingFormat<SerializationSchema<RowData>> valueFormat,
            int[] keyProjection,
            int[] valueProjection,
            Settings settings) {
        this.physicalDataType = physicalDataType;
        this.keyFormat = keyFormat;
        this.valueFormat = valueFormat;
        this.keyProjection = keyProjection;
        this.valueProjection = valueProjection;
        this.settings = settings;
    }

    @Override
    public ChangelogMode getChangelogMode(ChangelogMode requestedMode) {
        return valueFormat.getChangelogMode();
    }

    @Override
    public SinkRuntimeProvider getSinkRuntimeProvider(Context context) {
        SerializationSchema<RowData> keyEncoder =
                keyFormat == null
                        ? null
                        : keyFormat.createRuntimeEncoder(
                                context, Projection.of(keyProjection).project(physicalDataType));
        SerializationSchema<RowData> valueEncoder =
                valueFormat.createRuntimeEncoder(
                        context, Projection.of(valueProjection).project(physicalDataType));
        // The consumed row: the physical columns, then the metadata columns in metadataKeys order.
        int physicalFields = DataType.getFieldCount(physicalDataType);
        int timestamp = metadataKeys.indexOf(WritableMetadata.TIMESTAMP.key);
        int streamlet = metadataKeys.indexOf(WritableMetadata.STREAMLET.key);
        RowDataRecordSerializer serializer =
                new RowDataRecordSerializer(
                        keyEncoder,
                        keyProjection,
                        valueEncoder,
                        valueProjection,
                        timestamp < 0 ? -1 : physicalFields + timestamp,
                        streamlet < 0 ? -1 : physicalFields + streamlet);
        NearstreamSinkBuilder<RowData> builder =
                NearstreamSink.<RowData>builder()
                        .setBrokers(settings.broker())
                        .setStream(settings.stream())
                        .setRecordSerializer(serializer)
                        .setDeliveryGuarantee(settings.deliveryGuarantee());
        if (settings.transactionalIdPrefix() != null) {
            builder.setTransactionalIdPrefix(settings.transactionalIdPrefix());
        }
        return SinkV2Provider.of(builder.build(), settings.parallelism());
    }

    @Override
    public Map<String, DataType> listWritableMetadata() {
        Map<String, DataType> metadata = new LinkedHashMap<>();
        for (WritableMetadata m : WritableMetadata.values()) {
            metadata.put(m.key, m.type);
        }
        return metadata;
    }

    @Override
    public void applyWritableMetadata(List<String> metadataKeys, DataType consumedDataType) {
        this.metadataKeys = List.copyOf(metadataKeys);
    }

    @Override
    public DynamicTableSink copy() {
        NearstreamDynamicSink copy =
                new NearstreamDynamicSink(
                        physicalDataType,
                        keyFormat,
                        valueFormat,
                        keyProjection,
                        valueProjection,
                        settings);
        copy.metadataKeys = metadataKeys;
        return copy;
    }

    @Override
    public String asSummaryString() {
        return "Nearstream(" + settings.stream() + ", " + settings.deliveryGuarantee() + ")";
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof NearstreamDynamicSink that)) {
            return false;
        }
        return physicalDataType.equals(that.physicalDataType)
                && Objects.equals(keyFormat, that.keyFormat)
                && valueFormat.equals(that.valueFormat)
                && Arrays.equals(keyProjection, that.keyProjection)
                && Arrays.equals(valueProjection, that.valueProjection)
                && settings.equals(that.settings)
                && metadataKeys.equals(that.metadataKeys);
    }

    @Override
    public int hashCode() {
        return Objects.hash(physicalDataType, settings, metadataKeys);
    }
}
