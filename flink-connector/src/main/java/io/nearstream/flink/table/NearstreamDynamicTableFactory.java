package io.nearstream.flink.table;

import static io.nearstream.flink.table.NearstreamConnectorOptions.BROKERS;
import static io.nearstream.flink.table.NearstreamConnectorOptions.KEY_FIELDS;
import static io.nearstream.flink.table.NearstreamConnectorOptions.KEY_FORMAT;
import static io.nearstream.flink.table.NearstreamConnectorOptions.SCAN_BOUNDED_MODE;
import static io.nearstream.flink.table.NearstreamConnectorOptions.SCAN_BOUNDED_SPECIFIC_POSITIONS;
import static io.nearstream.flink.table.NearstreamConnectorOptions.SCAN_READ_MODE;
import static io.nearstream.flink.table.NearstreamConnectorOptions.SCAN_STARTUP_MODE;
import static io.nearstream.flink.table.NearstreamConnectorOptions.SCAN_STARTUP_SPECIFIC_POSITIONS;
import static io.nearstream.flink.table.NearstreamConnectorOptions.SCAN_STARTUP_TIMESTAMP_MILLIS;
import static io.nearstream.flink.table.NearstreamConnectorOptions.SCAN_STREAMLET_DISCOVERY_INTERVAL;
import static io.nearstream.flink.table.NearstreamConnectorOptions.SINK_DELIVERY_GUARANTEE;
import static io.nearstream.flink.table.NearstreamConnectorOptions.SINK_TRANSACTIONAL_ID_PREFIX;
import static io.nearstream.flink.table.NearstreamConnectorOptions.STREAM;
import static io.nearstream.flink.table.NearstreamConnectorOptions.VALUE_FIELDS_INCLUDE;
import static io.nearstream.flink.table.NearstreamConnectorOptions.VALUE_FORMAT;

import io.nearstream.flink.common.ConnectorChecks;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.connector.format.DecodingFormat;
import org.apache.flink.table.connector.format.EncodingFormat;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.factories.DeserializationFormatFactory;
import org.apache.flink.table.factories.DynamicTableSinkFactory;
import org.apache.flink.table.factories.DynamicTableSourceFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.factories.SerializationFormatFactory;
import org.apache.flink.table.types.DataType;

/**
 * The {@code nearstream} table connector: {@code CREATE TABLE t (...) WITH ('connector' =
 * 'nearstream', 'brokers' = 'host:port', 'stream' = 's', 'format' = 'json')}, read by a scan (pull,
 * push or auto) and written by {@code INSERT INTO}. Options are in {@link
 * NearstreamConnectorOptions}; docs/sql.md explains them.
 */
@Internal
public final class NearstreamDynamicTableFactory
        implements DynamicTableSourceFactory, DynamicTableSinkFactory {

    public static final String IDENTIFIER = "nearstream";

    /** Options under this prefix go to the DataStream source as they are, without the prefix. */
    static final String PROPERTIES_PREFIX = "properties.";

    @Override
    public String factoryIdentifier() {
        return IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Set.of(BROKERS, STREAM);
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return Set.of(
                FactoryUtil.FORMAT,
                KEY_FORMAT,
                KEY_FIELDS,
                VALUE_FORMAT,
                VALUE_FIELDS_INCLUDE,
                SCAN_READ_MODE,
                SCAN_STARTUP_MODE,
                SCAN_STARTUP_TIMESTAMP_MILLIS,
                SCAN_STARTUP_SPECIFIC_POSITIONS,
                SCAN_BOUNDED_MODE,
                SCAN_BOUNDED_SPECIFIC_POSITIONS,
                SCAN_STREAMLET_DISCOVERY_INTERVAL,
                FactoryUtil.SOURCE_PARALLELISM,
                FactoryUtil.SOURCE_IDLE_TIMEOUT,
                FactoryUtil.WATERMARK_EMIT_STRATEGY,
                FactoryUtil.WATERMARK_ALIGNMENT_GROUP,
                FactoryUtil.WATERMARK_ALIGNMENT_MAX_DRIFT,
                FactoryUtil.WATERMARK_ALIGNMENT_UPDATE_INTERVAL,
                SINK_DELIVERY_GUARANTEE,
                SINK_TRANSACTIONAL_ID_PREFIX,
                FactoryUtil.SINK_PARALLELISM);
    }

    @Override
    public Set<ConfigOption<?>> forwardOptions() {
        // Options that do not change the plan's topology: a compiled plan may take new values.
        return Set.of(
                BROKERS,
                SCAN_STREAMLET_DISCOVERY_INTERVAL,
                SINK_DELIVERY_GUARANTEE,
                SINK_TRANSACTIONAL_ID_PREFIX);
    }

    @Override
    public DynamicTableSource createDynamicTableSource(Context context) {
        FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        DecodingFormat<DeserializationSchema<RowData>> valueFormat =
                helper.discoverOptionalDecodingFormat(
                                DeserializationFormatFactory.class, FactoryUtil.FORMAT)
                        .orElseGet(
                                () ->
                                        helper.discoverDecodingFormat(
                                                DeserializationFormatFactory.class, VALUE_FORMAT));
        // The key format is only validated: reading never decodes a key (records carry none).
        helper.discoverOptionalDecodingFormat(DeserializationFormatFactory.class, KEY_FORMAT);
        helper.validateExcept(PROPERTIES_PREFIX);
        ReadableConfig options = helper.getOptions();
        DataType physical = context.getPhysicalRowDataType();
        NearstreamTableOptions.keyProjection(options, physical);
        NearstreamTableOptions.validateReadable(options, physical);
        FactoryUtil.validateWatermarkOptions(factoryIdentifier(), options);
        NearstreamDynamicSource.Settings settings =
                new NearstreamDynamicSource.Settings(
                        context.getObjectIdentifier().asSummaryString(),
                        broker(options),
                        stream(options),
                        options.get(SCAN_READ_MODE),
                        NearstreamTableOptions.startingPositions(options),
                        NearstreamTableOptions.stoppingPositions(options),
                        options.getOptional(SCAN_STREAMLET_DISCOVERY_INTERVAL).orElse(null),
                        properties(context.getCatalogTable().getOptions()),
                        options.getOptional(FactoryUtil.SOURCE_PARALLELISM).orElse(null),
                        formatName(options));
        return new NearstreamDynamicSource(physical, valueFormat, settings);
    }

    @Override
    public DynamicTableSink createDynamicTableSink(Context context) {
        FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        EncodingFormat<SerializationSchema<RowData>> valueFormat =
                helper.discoverOptionalEncodingFormat(
                                SerializationFormatFactory.class, FactoryUtil.FORMAT)
                        .orElseGet(
                                () ->
                                        helper.discoverEncodingFormat(
                                                SerializationFormatFactory.class, VALUE_FORMAT));
        EncodingFormat<SerializationSchema<RowData>> keyFormat =
                helper.discoverOptionalEncodingFormat(SerializationFormatFactory.class, KEY_FORMAT)
                        .orElse(null);
        helper.validateExcept(PROPERTIES_PREFIX);
        ReadableConfig options = helper.getOptions();
        DataType physical = context.getPhysicalRowDataType();
        NearstreamTableOptions.validateSink(options);
        NearstreamDynamicSink.Settings settings =
                new NearstreamDynamicSink.Settings(
                        broker(options),
                        stream(options),
                        options.get(SINK_DELIVERY_GUARANTEE),
                        options.getOptional(SINK_TRANSACTIONAL_ID_PREFIX).orElse(null),
                        options.getOptional(FactoryUtil.SINK_PARALLELISM).orElse(null));
        return new NearstreamDynamicSink(
                physical,
                keyFormat,
                valueFormat,
                NearstreamTableOptions.keyProjection(options, physical),
                NearstreamTableOptions.valueProjection(options, physical),
                settings);
    }

    private static String broker(ReadableConfig options) {
        try {
            return ConnectorChecks.brokers(new String[] {options.get(BROKERS)});
        } catch (RuntimeException e) {
            throw new ValidationException("Invalid 'brokers': " + e.getMessage(), e);
        }
    }

    private static String stream(ReadableConfig options) {
        try {
            return ConnectorChecks.stream(options.get(STREAM));
        } catch (RuntimeException e) {
            throw new ValidationException("Invalid 'stream': " + e.getMessage(), e);
        }
    }

    private static String formatName(ReadableConfig options) {
        return options.getOptional(FactoryUtil.FORMAT).orElseGet(() -> options.get(VALUE_FORMAT));
    }

    private static Map<String, String> properties(Map<String, String> tableOptions) {
        Map<String, String> properties = new HashMap<>();
        tableOptions.forEach(
                (k, v) -> {
                    if (k.startsWith(PROPERTIES_PREFIX)) {
                        properties.put(k.substring(PROPERTIES_PREFIX.length()), v);
                    }
                });
        return properties;
    }
}
