package io.nearstream.flink.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.Position;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.types.DataType;
import org.junit.jupiter.api.Test;

/** How table options become the source's and sink's settings, and what is refused. */
class NearstreamTableOptionsTest {

    private static final DataType ROW =
            DataTypes.ROW(
                    DataTypes.FIELD("customer", DataTypes.STRING()),
                    DataTypes.FIELD("amount", DataTypes.INT()),
                    DataTypes.FIELD("note", DataTypes.STRING()));

    private static Configuration options(String... keyValues) {
        Configuration c = new Configuration();
        for (int i = 0; i < keyValues.length; i += 2) {
            c.setString(keyValues[i], keyValues[i + 1]);
        }
        return c;
    }

    @Test
    void specificPositionsAreParsedPerStreamlet() {
        Map<Integer, Position> positions =
                NearstreamTableOptions.positions(
                        options(
                                "scan.startup.specific-positions",
                                " streamlet:0,position:1:0:0 ; streamlet:3,position:2:5:4096;"),
                        NearstreamConnectorOptions.SCAN_STARTUP_SPECIFIC_POSITIONS,
                        "startup");
        assertThat(positions)
                .containsExactly(
                        Map.entry(0, new Position(1, 0, 0)),
                        Map.entry(3, new Position(2, 5, 4096)));
    }

    @Test
    void malformedPositionsAreExplainedWithTheExpectedForm() {
        for (String bad :
                new String[] {
                    "streamlet:0,offset:12",
                    "streamlet:x,position:1:0:0",
                    "streamlet:-1,position:1:0:0",
                    "streamlet:0,position:1:0",
                    "streamlet:0,position:1:0:0;streamlet:0,position:1:0:8"
                }) {
            assertThatThrownBy(
                            () ->
                                    NearstreamTableOptions.positions(
                                            options("scan.bounded.specific-positions", bad),
                                            NearstreamConnectorOptions
                                                    .SCAN_BOUNDED_SPECIFIC_POSITIONS,
                                            "bounded"))
                    .as(bad)
                    .isInstanceOf(ValidationException.class)
                    .hasMessageContaining("Invalid 'scan.bounded.specific-positions'")
                    .hasMessageContaining("streamlet:0,position:1:0:0");
        }
        assertThatThrownBy(
                        () ->
                                NearstreamTableOptions.startingPositions(
                                        options("scan.startup.mode", "specific-positions")))
                .hasMessageContaining("needs 'scan.startup.specific-positions'");
        assertThatThrownBy(
                        () ->
                                NearstreamTableOptions.startingPositions(
                                        options("scan.startup.mode", "timestamp")))
                .hasMessageContaining("needs 'scan.startup.timestamp-millis'");
    }

    @Test
    void keyAndValueProjectionsFollowKeyFieldsAndValueFieldsInclude() {
        Configuration all = options("key.format", "raw", "key.fields", "customer");
        assertThat(NearstreamTableOptions.keyProjection(all, ROW)).containsExactly(0);
        assertThat(NearstreamTableOptions.valueProjection(all, ROW)).containsExactly(0, 1, 2);

        Configuration exceptKey =
                options(
                        "key.format", "json",
                        "key.fields", "note;customer",
                        "value.fields-include", "EXCEPT_KEY");
        assertThat(NearstreamTableOptions.keyProjection(exceptKey, ROW)).containsExactly(2, 0);
        assertThat(NearstreamTableOptions.valueProjection(exceptKey, ROW)).containsExactly(1);
        assertThatThrownBy(() -> NearstreamTableOptions.validateReadable(exceptKey, ROW))
                .hasMessageContaining("cannot be read");

        assertThatThrownBy(
                        () ->
                                NearstreamTableOptions.keyProjection(
                                        options("key.format", "raw", "key.fields", "nope"), ROW))
                .hasMessageContaining("'nope', which is not a physical column");
        assertThatThrownBy(
                        () ->
                                NearstreamTableOptions.keyProjection(
                                        options("key.format", "raw"), ROW))
                .hasMessageContaining("'key.fields' is not");
        assertThatThrownBy(
                        () ->
                                NearstreamTableOptions.keyProjection(
                                        options("key.fields", "customer"), ROW))
                .hasMessageContaining("needs 'key.format'");
    }

    @Test
    void exactlyOnceNeedsATransactionalIdPrefix() {
        assertThatThrownBy(
                        () ->
                                NearstreamTableOptions.validateSink(
                                        options("sink.delivery-guarantee", "exactly-once")))
                .hasMessageContaining("needs 'sink.transactional-id-prefix'");
        NearstreamTableOptions.validateSink(
                options(
                        "sink.delivery-guarantee", "exactly-once",
                        "sink.transactional-id-prefix", "job-a"));
        NearstreamTableOptions.validateSink(options("sink.delivery-guarantee", "at-least-once"));
    }

    @Test
    void boundedModes() {
        assertThat(NearstreamTableOptions.stoppingPositions(options())).isNull();
        assertThat(NearstreamTableOptions.stoppingPositions(options("scan.bounded.mode", "latest")))
                .isNotNull();
    }
}
