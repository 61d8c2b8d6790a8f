package io.nearstream.flink.table;

import static io.nearstream.flink.table.NearstreamConnectorOptions.KEY_FIELDS;
import static io.nearstream.flink.table.NearstreamConnectorOptions.KEY_FORMAT;
import static io.nearstream.flink.table.NearstreamConnectorOptions.SCAN_BOUNDED_MODE;
import static io.nearstream.flink.table.NearstreamConnectorOptions.SCAN_BOUNDED_SPECIFIC_POSITIONS;
import static io.nearstream.flink.table.NearstreamConnectorOptions.SCAN_STARTUP_MODE;
import static io.nearstream.flink.table.NearstreamConnectorOptions.SCAN_STARTUP_SPECIFIC_POSITIONS;
import static io.nearstream.flink.table.NearstreamConnectorOptions.SCAN_STARTUP_TIMESTAMP_MILLIS;
import static io.nearstream.flink.table.NearstreamConnectorOptions.SINK_DELIVERY_GUARANTEE;
import static io.nearstream.flink.table.NearstreamConnectorOptions.SINK_TRANSACTIONAL_ID_PREFIX;
import static io.nearstream.flink.table.NearstreamConnectorOptions.VALUE_FIELDS_INCLUDE;

import io.nearstream.client.Position;
import io.nearstream.flink.source.NearstreamStartingPositions;
import io.nearstream.flink.source.NearstreamStoppingPositions;
import io.nearstream.flink.table.NearstreamConnectorOptions.ValueFieldsStrategy;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.IntStream;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.utils.LogicalTypeChecks;

/**
 * Turns the table options into the DataStream source's and sink's settings, and explains every
 * combination that cannot work (Flink shows the {@link ValidationException} with the table's name).
 */
@Internal
final class NearstreamTableOptions {

    private NearstreamTableOptions() {}

    static NearstreamStartingPositions startingPositions(ReadableConfig options) {
        switch (options.get(SCAN_STARTUP_MODE)) {
            case LATEST:
                return NearstreamStartingPositions.latest();
            case TIMESTAMP:
                Long ms = options.getOptional(SCAN_STARTUP_TIMESTAMP_MILLIS).orElse(null);
                if (ms == null) {
                    throw new ValidationException(
                            "'scan.startup.mode' = 'timestamp' needs '"
                                    + SCAN_STARTUP_TIMESTAMP_MILLIS.key()
                                    + "'.");
                }
                if (ms < 0) {
                    throw new ValidationException(
                            "'"
                                    + SCAN_STARTUP_TIMESTAMP_MILLIS.key()
                                    + "' must be >= 0, got "
                                    + ms);
                }
                return NearstreamStartingPositions.timestamp(ms);
            case SPECIFIC_POSITIONS:
                return NearstreamStartingPositions.specific(
                        positions(options, SCAN_STARTUP_SPECIFIC_POSITIONS, "startup"));
            case EARLIEST:
            default:
                return NearstreamStartingPositions.earliest();
        }
    }

    /** The stopping positions, or null for an unbounded scan. */
    @Nullable
    static NearstreamStoppingPositions stoppingPositions(ReadableConfig options) {
        switch (options.get(SCAN_BOUNDED_MODE)) {
            case LATEST:
                return NearstreamStoppingPositions.latest();
            case SPECIFIC_POSITIONS:
                return NearstreamStoppingPositions.specific(
                        positions(options, SCAN_BOUNDED_SPECIFIC_POSITIONS, "bounded"));
            case UNBOUNDED:
            default:
                return null;
        }
    }

    /**
     * Parses {@code streamlet:0,position:1:0:0;streamlet:1,position:1:0:4096}: a position per
     * streamlet, as the {@code position} metadata column and the CLI print them.
     */
    static Map<Integer, Position> positions(
            ReadableConfig options, ConfigOption<String> option, String mode) {
        String key = option.key();
        String text = options.getOptional(option).orElse(null);
        if (text == null || text.isBlank()) {
            throw new ValidationException(
                    "'scan." + mode + ".mode' = 'specific-positions' needs '" + key + "'.");
        }
        Map<Integer, Position> positions = new TreeMap<>();
        for (String entry : text.split(";")) {
            String e = entry.trim();
            if (e.isEmpty()) {
                continue;
            }
            String[] parts = e.split(",");
            if (parts.length != 2
                    || !parts[0].trim().startsWith("streamlet:")
                    || !parts[1].trim().startsWith("position:")) {
                throw invalidPositions(key, text, "'" + e + "' is not streamlet:N,position:G:S:O");
            }
            int streamlet;
            Position position;
            try {
                streamlet = Integer.parseInt(parts[0].trim().substring("streamlet:".length()));
                position = Position.parse(parts[1].trim().substring("position:".length()));
            } catch (RuntimeException ex) {
                throw invalidPositions(key, text, ex.getMessage());
            }
            if (streamlet < 0) {
                throw invalidPositions(key, text, "streamlet " + streamlet + " is negative");
            }
            if (positions.put(streamlet, position) != null) {
                throw invalidPositions(key, text, "streamlet " + streamlet + " is listed twice");
            }
        }
        return positions;
    }

    private static ValidationException invalidPositions(String key, String text, String why) {
        return new ValidationException(
                "Invalid '"
                        + key
                        + "' = '"
                        + text
                        + "': "
                        + why
                        + ". Expected e.g. 'streamlet:0,position:1:0:0;streamlet:1,position:1:0:4096'.");
    }

    /** The indexes of the key fields in the physical row; empty when there is no key. */
    static int[] keyProjection(ReadableConfig options, DataType physicalDataType) {
        List<String> keyFields = options.get(KEY_FIELDS);
        boolean keyFormat = options.getOptional(KEY_FORMAT).isPresent();
        if (keyFields.isEmpty()) {
            if (keyFormat) {
                throw new ValidationException(
                        "'key.format' is set but 'key.fields' is not: name the key columns.");
            }
            return new int[0];
        }
        if (!keyFormat) {
            throw new ValidationException(
                    "'key.fields' needs 'key.format': the format that serializes the key.");
        }
        List<String> names = LogicalTypeChecks.getFieldNames(physicalDataType.getLogicalType());
        return keyFields.stream()
                .mapToInt(
                        f -> {
                            int i = names.indexOf(f);
                            if (i < 0) {
                                throw new ValidationException(
                                        "'key.fields' names '"
                                                + f
                                                + "', which is not a physical column of "
                                                + names);
                            }
                            return i;
                        })
                .toArray();
    }

    /** The indexes of the value fields in the physical row. */
    static int[] valueProjection(ReadableConfig options, DataType physicalDataType) {
        int fields = LogicalTypeChecks.getFieldCount(physicalDataType.getLogicalType());
        int[] key = keyProjection(options, physicalDataType);
        if (options.get(VALUE_FIELDS_INCLUDE) == ValueFieldsStrategy.ALL) {
            return IntStream.range(0, fields).toArray();
        }
        return IntStream.range(0, fields)
                .filter(i -> IntStream.of(key).noneMatch(k -> k == i))
                .toArray();
    }

    /** A table is readable only if its value holds every physical column. */
    static void validateReadable(ReadableConfig options, DataType physicalDataType) {
        if (options.get(VALUE_FIELDS_INCLUDE) == ValueFieldsStrategy.EXCEPT_KEY
                && keyProjection(options, physicalDataType).length > 0) {
            throw new ValidationException(
                    "A table with 'value.fields-include' = 'EXCEPT_KEY' cannot be read:"
                            + " Nearstream records carry no key, so the key columns would be"
                            + " lost. Use 'ALL' (the default) to read this table.");
        }
    }

    static void validateSink(ReadableConfig options) {
        if (options.get(SINK_DELIVERY_GUARANTEE) == DeliveryGuarantee.EXACTLY_ONCE
                && options.getOptional(SINK_TRANSACTIONAL_ID_PREFIX).isEmpty()) {
            throw new ValidationException(
                    "'sink.delivery-guarantee' = 'exactly-once' needs '"
                            + SINK_TRANSACTIONAL_ID_PREFIX.key()
                            + "', unique among the jobs that write to the stream.");
        }
    }
}
