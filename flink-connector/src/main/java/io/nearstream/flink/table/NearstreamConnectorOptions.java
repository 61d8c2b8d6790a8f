package io.nearstream.flink.table;

import static org.apache.flink.configuration.ConfigOptions.key;
import static org.apache.flink.configuration.description.TextElement.text;

import io.nearstream.flink.source.ReadMode;
import java.time.Duration;
import java.util.List;
import org.apache.flink.annotation.PublicEvolving;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.DescribedEnum;
import org.apache.flink.configuration.description.InlineElement;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.table.factories.FactoryUtil;

/**
 * The options of the {@code nearstream} table connector (docs/sql.md). Names follow Flink's Kafka
 * table connector where the concept is the same, so that a Kafka table moves over by changing
 * {@code connector}, {@code brokers} and {@code stream}.
 */
@PublicEvolving
public final class NearstreamConnectorOptions {

    private NearstreamConnectorOptions() {}

    public static final ConfigOption<String> BROKERS =
            key("brokers")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "The broker that holds the stream, as host:port (one address today:"
                                    + " a stream lives on one broker).");

    public static final ConfigOption<String> STREAM =
            key("stream").stringType().noDefaultValue().withDescription("The stream's name.");

    // --- formats, as in Kafka's table connector ---------------------------------------------

    public static final ConfigOption<String> KEY_FORMAT =
            key("key" + FactoryUtil.FORMAT_SUFFIX)
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "The format that serializes the key fields. Nearstream records carry"
                                    + " no key: the serialized key only chooses the streamlet"
                                    + " (equal keys, same streamlet).");

    public static final ConfigOption<List<String>> KEY_FIELDS =
            key("key.fields")
                    .stringType()
                    .asList()
                    .defaultValues()
                    .withDescription(
                            "The physical columns that form the key, separated by ';'. Requires"
                                    + " 'key.format'.");

    public static final ConfigOption<String> VALUE_FORMAT =
            key("value" + FactoryUtil.FORMAT_SUFFIX)
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "The format of the records' bytes; 'format' is the same option.");

    public static final ConfigOption<ValueFieldsStrategy> VALUE_FIELDS_INCLUDE =
            key("value.fields-include")
                    .enumType(ValueFieldsStrategy.class)
                    .defaultValue(ValueFieldsStrategy.ALL)
                    .withDescription(
                            "Which physical columns the value holds. EXCEPT_KEY leaves the key"
                                    + " fields out; since records carry no key, such a table can"
                                    + " be written but not read.");

    // --- scan ---------------------------------------------------------------------------------

    public static final ConfigOption<ReadMode> SCAN_READ_MODE =
            key("scan.read-mode")
                    .enumType(ReadMode.class)
                    .defaultValue(ReadMode.AUTO)
                    .withDescription(
                            "How source tasks get records: 'pull' (fetch requests over TCP),"
                                    + " 'push' (the broker fills shared-memory rings on its host)"
                                    + " or 'auto' (push for tasks on the broker's host, pull for"
                                    + " the others).");

    public static final ConfigOption<StartupMode> SCAN_STARTUP_MODE =
            key("scan.startup.mode")
                    .enumType(StartupMode.class)
                    .defaultValue(StartupMode.EARLIEST)
                    .withDescription("Where reading starts in every streamlet.");

    public static final ConfigOption<Long> SCAN_STARTUP_TIMESTAMP_MILLIS =
            key("scan.startup.timestamp-millis")
                    .longType()
                    .noDefaultValue()
                    .withDescription(
                            "For 'timestamp' startup: the first chunk whose first record's"
                                    + " timestamp (ms since the epoch) is at or after this.");

    public static final ConfigOption<String> SCAN_STARTUP_SPECIFIC_POSITIONS =
            key("scan.startup.specific-positions")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "For 'specific-positions' startup: chunk positions per streamlet,"
                                    + " e.g. 'streamlet:0,position:1:0:0;streamlet:1,position:1:0:4096'"
                                    + " (a position as the 'position' metadata column and the"
                                    + " nearstream CLI print it); streamlets not listed start at"
                                    + " their earliest data.");

    public static final ConfigOption<BoundedMode> SCAN_BOUNDED_MODE =
            key("scan.bounded.mode")
                    .enumType(BoundedMode.class)
                    .defaultValue(BoundedMode.UNBOUNDED)
                    .withDescription("Where reading ends, if anywhere.");

    public static final ConfigOption<String> SCAN_BOUNDED_SPECIFIC_POSITIONS =
            key("scan.bounded.specific-positions")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "For 'specific-positions' bounded mode: the chunk position per"
                                    + " streamlet where reading stops (same syntax as"
                                    + " 'scan.startup.specific-positions'); streamlets not listed"
                                    + " stop at their tail when the job starts.");

    public static final ConfigOption<Duration> SCAN_STREAMLET_DISCOVERY_INTERVAL =
            key("scan.streamlet-discovery.interval")
                    .durationType()
                    .noDefaultValue()
                    .withDescription(
                            "How often the source looks for streamlets added to the stream;"
                                    + " the DataStream source's default when not set.");

    // --- sink ---------------------------------------------------------------------------------

    public static final ConfigOption<DeliveryGuarantee> SINK_DELIVERY_GUARANTEE =
            key("sink.delivery-guarantee")
                    .enumType(DeliveryGuarantee.class)
                    .defaultValue(DeliveryGuarantee.AT_LEAST_ONCE)
                    .withDescription(
                            "'exactly-once' writes through transactions committed with each"
                                    + " checkpoint (needs checkpointing and"
                                    + " 'sink.transactional-id-prefix'); 'at-least-once' flushes"
                                    + " on each checkpoint; 'none' does neither.");

    public static final ConfigOption<String> SINK_TRANSACTIONAL_ID_PREFIX =
            key("sink.transactional-id-prefix")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "For 'exactly-once': the prefix of the sink's transactional ids,"
                                    + " unique among the jobs writing to the stream.");

    /** What the value holds, as in Kafka's table connector. */
    @PublicEvolving
    public enum ValueFieldsStrategy {
        ALL,
        EXCEPT_KEY
    }

    /** Where a scan starts. */
    @PublicEvolving
    public enum StartupMode implements DescribedEnum {
        EARLIEST("earliest", "The oldest data each streamlet holds."),
        LATEST("latest", "The streamlets' tails when the job starts: only newer data."),
        TIMESTAMP("timestamp", "The first chunk at or after 'scan.startup.timestamp-millis'."),
        SPECIFIC_POSITIONS(
                "specific-positions", "The positions of 'scan.startup.specific-positions'.");

        private final String value;
        private final InlineElement description;

        StartupMode(String value, String description) {
            this.value = value;
            this.description = text(description);
        }

        @Override
        public String toString() {
            return value;
        }

        @Override
        public InlineElement getDescription() {
            return description;
        }
    }

    /** Where a scan ends. */
    @PublicEvolving
    public enum BoundedMode implements DescribedEnum {
        UNBOUNDED("unbounded", "Never: a streaming source."),
        LATEST("latest", "The streamlets' tails when the job starts."),
        SPECIFIC_POSITIONS(
                "specific-positions", "The positions of 'scan.bounded.specific-positions'.");

        private final String value;
        private final InlineElement description;

        BoundedMode(String value, String description) {
            this.value = value;
            this.description = text(description);
        }

        @Override
        public String toString() {
            return value;
        }

        @Override
        public InlineElement getDescription() {
            return description;
        }
    }
}
