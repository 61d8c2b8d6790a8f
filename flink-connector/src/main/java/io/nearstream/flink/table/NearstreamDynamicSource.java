package io.nearstream.flink.table;

import io.nearstream.flink.source.NearstreamSource;
import io.nearstream.flink.source.NearstreamSourceBuilder;
import io.nearstream.flink.source.NearstreamStartingPositions;
import io.nearstream.flink.source.NearstreamStoppingPositions;
import io.nearstream.flink.source.ReadMode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.stream.IntStream;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSource;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.Projection;
import org.apache.flink.table.connector.ProviderContext;
import org.apache.flink.table.connector.format.DecodingFormat;
import org.apache.flink.table.connector.format.ProjectableDecodingFormat;
import org.apache.flink.table.connector.source.DataStreamScanProvider;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.ScanTableSource;
import org.apache.flink.table.connector.source.abilities.SupportsFilterPushDown;
import org.apache.flink.table.connector.source.abilities.SupportsProjectionPushDown;
import org.apache.flink.table.connector.source.abilities.SupportsReadingMetadata;
import org.apache.flink.table.connector.source.abilities.SupportsWatermarkPushDown;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.expressions.ResolvedExpression;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.table.types.utils.DataTypeUtils;

/**
 * A {@code nearstream} table read as a scan: the DataStream {@link NearstreamSource} (pull, push or
 * auto) with a row deserializer built from the table's value format. Watermarks declared in SQL are
 * generated in the source (per streamlet split, so idle streamlets can be marked idle), only the
 * projected columns are decoded where the format can, and metadata columns are appended.
 */
@Internal
final class NearstreamDynamicSource
        implements ScanTableSource,
                SupportsReadingMetadata,
                SupportsWatermarkPushDown,
                SupportsProjectionPushDown,
                SupportsFilterPushDown {

    /**
     * Formats trusted to decode only the projected columns. Flink 2.2's avro format is projectable
     * too, but decodes with the projected schema as the writer's schema, which misreads binary
     * Avro: avro (and any format not listed) decodes whole records, then the row is projected.
     */
    private static final Set<String> FORMATS_THAT_DECODE_PROJECTIONS = Set.of("json", "csv");

    /** The source operator's uid suffix (stable across plan changes, for savepoints). */
    private static final String TRANSFORMATION = "nearstream";

    /** What the factory decided; copied as is. */
    record Settings(
            String tableIdentifier,
            String broker,
            String stream,
            ReadMode readMode,
            NearstreamStartingPositions startingPositions,
            @Nullable NearstreamStoppingPositions stoppingPositions,
            @Nullable Duration discoveryInterval,
            Map<String, String> properties,
            @Nullable Integer parallelism,
            String formatName) {}

    private final DataType physicalDataType;
    private final DecodingFormat<DeserializationSchema<RowData>> valueFormat;
    private final Settings settings;

    /** Top-level indexes of the physical columns to produce (all of them until projected). */
    private int[] projection;

    private List<String> metadataKeys = List.of();
    @Nullable private WatermarkStrategy<RowData> watermarkStrategy;

    /** A WHERE predicate the source applies as a record filter (JSON tables only), if any. */
    @Nullable private JsonFilterPushDown.Pushed pushedFilter;

    NearstreamDynamicSource(
            DataType physicalDataType,
            DecodingFormat<DeserializationSchema<RowData>> valueFormat,
            Settings settings) {
        this.physicalDataType = physicalDataType;
        this.valueFormat = valueFormat;
        this.settings = settings;
        this.projection = IntStream.range(0, DataType.getFieldCount(physicalDataType)).toArray();
    }

    @Override
    public ChangelogMode getChangelogMode() {
        return valueFormat.getChangelogMode();
    }

    @Override
    public ScanRuntimeProvider getScanRuntimeProvider(ScanContext context) {
        NearstreamSource<RowData> source = source(context);
        WatermarkStrategy<RowData> watermarks =
                watermarkStrategy == null ? WatermarkStrategy.noWatermarks() : watermarkStrategy;
        Integer parallelism = settings.parallelism();
        boolean bounded = settings.stoppingPositions() != null;
        String name = "Nearstream-" + settings.tableIdentifier();
        return new DataStreamScanProvider() {
            @Override
            public DataStream<RowData> produceDataStream(
                    ProviderContext providerContext, StreamExecutionEnvironment env) {
                DataStreamSource<RowData> stream = env.fromSource(source, watermarks, name);
                providerContext.generateUid(TRANSFORMATION).ifPresent(stream::uid);
                if (parallelism != null) {
                    stream.setParallelism(parallelism);
                }
                return stream;
            }

            @Override
            public boolean isBounded() {
                return bounded;
            }
        };
    }

    private NearstreamSource<RowData> source(DynamicTableSource.Context context) {
        Projection projected = Projection.of(projection);
        DeserializationSchema<RowData> decoder;
        int[] projectAfterDecoding = null;
        if (valueFormat instanceof ProjectableDecodingFormat<DeserializationSchema<RowData>> p
                && FORMATS_THAT_DECODE_PROJECTIONS.contains(settings.formatName())) {
            decoder =
                    p.createRuntimeDecoder(context, physicalDataType, projected.toNestedIndexes());
        } else {
            decoder = valueFormat.createRuntimeDecoder(context, physicalDataType);
            if (!isIdentity(projection, DataType.getFieldCount(physicalDataType))) {
                projectAfterDecoding = projection.clone();
            }
        }
        ReadableMetadata[] metadata =
                metadataKeys.stream().map(ReadableMetadata::of).toArray(ReadableMetadata[]::new);
        List<DataTypes.Field> metadataFields = new ArrayList<>();
        for (ReadableMetadata m : metadata) {
            metadataFields.add(DataTypes.FIELD(m.key, m.type));
        }
        DataType produced =
                DataTypeUtils.appendRowFields(projected.project(physicalDataType), metadataFields);
        RowDataRecordDeserializer deserializer =
                new RowDataRecordDeserializer(
                        settings.stream(),
                        settings.formatName(),
                        decoder,
                        projectAfterDecoding,
                        metadata,
                        context.createTypeInformation(produced));
        NearstreamSourceBuilder<RowData> builder =
                NearstreamSource.<RowData>builder()
                        .setBrokers(settings.broker())
                        .setStream(settings.stream())
                        .setReadMode(settings.readMode())
                        .setStartingPositions(settings.startingPositions())
                        .setDeserializer(deserializer);
        if (pushedFilter != null) {
            builder.setRecordFilter(pushedFilter.filter());
        }
        if (settings.stoppingPositions() != null) {
            builder.setBounded(settings.stoppingPositions());
        }
        if (settings.discoveryInterval() != null) {
            builder.setStreamletDiscoveryIntervalMs(settings.discoveryInterval().toMillis());
        }
        settings.properties().forEach(builder::setProperty);
        return builder.build();
    }

    private static boolean isIdentity(int[] projection, int fields) {
        if (projection.length != fields) {
            return false;
        }
        for (int i = 0; i < fields; i++) {
            if (projection[i] != i) {
                return false;
            }
        }
        return true;
    }

    @Override
    public Map<String, DataType> listReadableMetadata() {
        Map<String, DataType> metadata = new LinkedHashMap<>();
        for (ReadableMetadata m : ReadableMetadata.values()) {
            metadata.put(m.key, m.type);
        }
        return metadata;
    }

    @Override
    public void applyReadableMetadata(List<String> metadataKeys, DataType producedDataType) {
        this.metadataKeys = List.copyOf(metadataKeys);
    }

    @Override
    public void applyWatermark(WatermarkStrategy<RowData> watermarkStrategy) {
        this.watermarkStrategy = watermarkStrategy;
    }

    @Override
    public boolean supportsNestedProjection() {
        return false;
    }

    @Override
    public void applyProjection(int[][] projectedFields, DataType producedDataType) {
        this.projection = Projection.of(projectedFields).toTopLevelIndexes();
    }

    /**
     * Hands one equality predicate on a string column of a {@code json} table to the source ({@link
     * JsonFilterPushDown}); every predicate also stays with Flink, so the source only narrows what
     * reaches them.
     */
    @Override
    public Result applyFilters(List<ResolvedExpression> filters) {
        pushedFilter = null;
        if ("json".equals(settings.formatName())) {
            List<String> names = DataType.getFieldNames(physicalDataType);
            List<DataType> types = DataType.getFieldDataTypes(physicalDataType);
            List<String> stringColumns = new ArrayList<>();
            for (int i = 0; i < names.size(); i++) {
                if (types.get(i).getLogicalType().getTypeRoot() == LogicalTypeRoot.VARCHAR) {
                    stringColumns.add(names.get(i));
                }
            }
            pushedFilter = JsonFilterPushDown.firstPushable(filters, stringColumns).orElse(null);
        }
        return Result.of(
                pushedFilter == null ? List.of() : List.of(pushedFilter.expression()), filters);
    }

    @Override
    public DynamicTableSource copy() {
        NearstreamDynamicSource copy =
                new NearstreamDynamicSource(physicalDataType, valueFormat, settings);
        copy.projection = projection.clone();
        copy.metadataKeys = metadataKeys;
        copy.watermarkStrategy = watermarkStrategy;
        copy.pushedFilter = pushedFilter;
        return copy;
    }

    @Override
    public String asSummaryString() {
        return "Nearstream("
                + settings.stream()
                + ", "
                + settings.readMode()
                + (pushedFilter == null ? "" : ", filter " + pushedFilter.filter())
                + ")";
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof NearstreamDynamicSource that)) {
            return false;
        }
        return physicalDataType.equals(that.physicalDataType)
                && valueFormat.equals(that.valueFormat)
                && settings.equals(that.settings)
                && Arrays.equals(projection, that.projection)
                && metadataKeys.equals(that.metadataKeys)
                && Objects.equals(watermarkStrategy, that.watermarkStrategy)
                && Objects.equals(pushedFilter, that.pushedFilter);
    }

    @Override
    public int hashCode() {
        return Objects.hash(
                physicalDataType,
                settings,
                Arrays.hashCode(projection),
                metadataKeys,
                pushedFilter);
    }
}
