package io.nearstream.flink.source;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.Position;
import io.nearstream.client.RecordFilter;
import io.nearstream.client.SlotFormat;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import java.time.Duration;
import java.util.Map;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.util.InstantiationUtil;
import org.junit.jupiter.api.Test;

/** The builder: defaults, settings, and the messages of {@code build()} for wrong ones. */
class NearstreamSourceBuilderTest {

    private static NearstreamSourceBuilder<String> valid() {
        return NearstreamSource.<String>builder()
                .setBrokers("127.0.0.1:7420")
                .setStream("clicks")
                .setDeserializer(NearstreamRecordDeserializationSchema.utf8());
    }

    @Test
    void buildsWithDefaults() {
        NearstreamSource<String> source = valid().build();

        assertThat(source.broker()).isEqualTo("127.0.0.1:7420");
        assertThat(source.stream()).isEqualTo("clicks");
        assertThat(source.readMode()).isEqualTo(ReadMode.PULL);
        assertThat(source.getBoundedness()).isEqualTo(Boundedness.CONTINUOUS_UNBOUNDED);
        assertThat(source.getProducedType()).isEqualTo(Types.STRING);
        assertThat(source.configuration().get(NearstreamSourceOptions.FETCH_MAX_WAIT))
                .isEqualTo(Duration.ofMillis(500));
    }

    @Test
    void typedSettersAndPropertiesEndUpInTheConfiguration() {
        NearstreamSource<String> source =
                valid().setFetchMaxBytesPerStreamlet(4096)
                        .setFetchMaxWaitMs(0)
                        .setStreamletDiscoveryIntervalMs(-1)
                        .setProperty("nearstream.source.fetch.retries", "7")
                        .setProperty("source.reader.element.queue.capacity", "4")
                        .build();

        assertThat(
                        source.configuration()
                                .get(NearstreamSourceOptions.FETCH_MAX_BYTES_PER_STREAMLET))
                .isEqualTo(4096);
        assertThat(source.configuration().get(NearstreamSourceOptions.FETCH_MAX_WAIT)).isZero();
        assertThat(source.configuration().get(NearstreamSourceOptions.FETCH_RETRIES)).isEqualTo(7);
        assertThat(source.configuration().toMap())
                .containsEntry("source.reader.element.queue.capacity", "4");
    }

    @Test
    void boundedWhenStoppingPositionsAreSet() {
        assertThat(
                        valid().setBounded(NearstreamStoppingPositions.latest())
                                .build()
                                .getBoundedness())
                .isEqualTo(Boundedness.BOUNDED);
        assertThat(
                        valid().setBounded(NearstreamStoppingPositions.latest())
                                .setUnbounded()
                                .build()
                                .getBoundedness())
                .isEqualTo(Boundedness.CONTINUOUS_UNBOUNDED);
    }

    @Test
    void theSourceIsSerializable() throws Exception {
        NearstreamSource<String> source =
                valid().setStartingPositions(
                                NearstreamStartingPositions.specific(
                                        Map.of(1, new Position(1, 2, 3))))
                        .setBounded(NearstreamStoppingPositions.latest())
                        .setValueOnlyDeserializer(new SimpleStringSchema())
                        .build();

        NearstreamSource<String> copy =
                InstantiationUtil.clone(source, getClass().getClassLoader());

        assertThat(copy.toString()).isEqualTo(source.toString());
    }

    @Test
    void explainsMissingSettings() {
        assertThatThrownBy(() -> NearstreamSource.<String>builder().build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("setBrokers");
        assertThatThrownBy(
                        () ->
                                NearstreamSource.<String>builder()
                                        .setBrokers("h:1")
                                        .setDeserializer(
                                                NearstreamRecordDeserializationSchema.utf8())
                                        .build())
                .hasMessageContaining("setStream");
        assertThatThrownBy(
                        () ->
                                NearstreamSource.<String>builder()
                                        .setBrokers("h:1")
                                        .setStream("s")
                                        .build())
                .hasMessageContaining("setDeserializer");
    }

    @Test
    void explainsWrongBrokers() {
        // A cluster's brokers, in every read mode (PUSH fails a reader given a remote broker's
        // streamlet, which only the readers' hosts can tell).
        assertThat(valid().setBrokers("a:1", " b:2,c:3").build()).isNotNull();
        assertThat(valid().setBrokers("a:1", "b:2").setReadMode(ReadMode.PUSH).build()).isNotNull();
        assertThatThrownBy(() -> valid().setBrokers("a:1,nohost").build())
                .hasMessageContaining("got 'nohost'");
        for (String bad : new String[] {"host", "host:", ":80", "host:0", "host:70000", "::1:80"}) {
            assertThatThrownBy(() -> valid().setBrokers(bad).build())
                    .as(bad)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("host:port");
        }
        assertThat(valid().setBrokers("[::1]:7420").build().broker()).isEqualTo("[::1]:7420");
    }

    @Test
    void explainsWrongStreamNames() {
        assertThatThrownBy(() -> valid().setStream(".hidden").build())
                .hasMessageContaining("'.hidden' is invalid");
        assertThatThrownBy(() -> valid().setStream("a/b").build())
                .hasMessageContaining("[A-Za-z0-9._-]");
        assertThatThrownBy(() -> valid().setStream("x".repeat(201)).build())
                .hasMessageContaining("1 to 200 bytes");
    }

    @Test
    void explainsWrongFetchSettings() {
        assertThatThrownBy(() -> valid().setFetchMaxBytesPerStreamlet(0).build())
                .hasMessageContaining("must be positive, got 0");
        assertThatThrownBy(() -> valid().setFetchMaxWaitMs(60_001).build())
                .hasMessageContaining("0 to 60000 ms");
        assertThatThrownBy(
                        () ->
                                valid().setProperty("nearstream.source.fetch.retries", "many")
                                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("Invalid value 'many' for nearstream.source.fetch.retries");
        assertThatThrownBy(() -> valid().setFetchMaxBytesPerStreamlet(64 << 20).build())
                .hasMessageContaining("must be at least the max bytes per streamlet");
    }

    @Test
    void positionsValidateTheirArguments() {
        assertThatThrownBy(() -> NearstreamStartingPositions.timestamp(-1))
                .hasMessageContaining("timestamp must be >= 0");
        assertThatThrownBy(
                        () -> NearstreamStartingPositions.specific(Map.of(-1, Position.EARLIEST)))
                .hasMessageContaining("streamlet indexes must be >= 0");
        assertThat(NearstreamStartingPositions.timestamp(5).toString()).isEqualTo("timestamp(5)");
        assertThat(NearstreamStoppingPositions.latest().toString()).isEqualTo("latest");
    }

    @Test
    void pushSettingsAndASourceIdSharedByEverySubtask() throws Exception {
        NearstreamSource<String> source =
                valid().setReadMode(ReadMode.PUSH)
                        .setPushSlots(16, 64 * 1024)
                        .setPushConsumerTimeoutMs(3_000)
                        .build();

        assertThat(source.readMode()).isEqualTo(ReadMode.PUSH);
        assertThat(source.configuration().get(NearstreamSourceOptions.PUSH_SLOTS_PER_RING))
                .isEqualTo(16);
        assertThat(source.configuration().get(NearstreamSourceOptions.PUSH_SLOT_BYTES))
                .isEqualTo(64 * 1024);
        assertThat(source.configuration().get(NearstreamSourceOptions.PUSH_CONSUMER_TIMEOUT))
                .isEqualTo(Duration.ofSeconds(3));
        // Every subtask deserializes the same source: the same id; another build, another id.
        NearstreamSource<String> copy =
                InstantiationUtil.clone(source, getClass().getClassLoader());
        assertThat(copy.sourceId()).isEqualTo(source.sourceId());
        assertThat(valid().build().sourceId()).isNotEqualTo(source.sourceId());
    }

    @Test
    void readersPushOrPullByMode() {
        assertThat(valid().build().pushes("localhost")).isFalse();
        assertThat(valid().setReadMode(ReadMode.PUSH).build().pushes("elsewhere")).isTrue();
        // AUTO: a loopback broker is local to every reader; a named one only on its host.
        assertThat(valid().setReadMode(ReadMode.AUTO).build().pushes("elsewhere")).isTrue();
        NearstreamSource<String> remote =
                valid().setBrokers("broker.invalid:7420").setReadMode(ReadMode.AUTO).build();
        assertThat(remote.pushes("worker-1.invalid")).isFalse();
        assertThat(remote.pushes("BROKER.invalid")).isTrue();
    }

    @Test
    void theReadModeIsAnOptionLikeAnyOther() {
        // As a table factory or a job configuration sets it: by key, as a string.
        NearstreamSource<String> push =
                valid().setProperty("nearstream.source.read-mode", "PUSH").build();
        assertThat(push.readMode()).isEqualTo(ReadMode.PUSH);
        assertThat(push.configuration().get(NearstreamSourceOptions.READ_MODE))
                .isEqualTo(ReadMode.PUSH);
        assertThat(valid().setReadMode(ReadMode.AUTO).build().configuration().toMap())
                .containsEntry("nearstream.source.read-mode", "AUTO");
        assertThatThrownBy(
                        () ->
                                valid().setProperty("nearstream.source.read-mode", "SIDEWAYS")
                                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("nearstream.source.read-mode")
                .hasMessageContaining("SIDEWAYS");
    }

    @Test
    void thePushSlotFormatTravelsInTheConfigurationAndDefaultsToBinary() throws Exception {
        assertThat(valid().build().configuration().get(NearstreamSourceOptions.PUSH_SLOT_FORMAT))
                .isEqualTo("binary");
        NearstreamSource<String> source = valid().setPushSlotFormat(SlotFormat.BINARY_VIEW).build();
        assertThat(
                        SlotFormat.parse(
                                source.configuration()
                                        .get(NearstreamSourceOptions.PUSH_SLOT_FORMAT)))
                .isEqualTo(SlotFormat.BINARY_VIEW);
        assertThat(
                        valid().setProperty("nearstream.source.push.slot-format", "binary-view")
                                .build()
                                .configuration()
                                .get(NearstreamSourceOptions.PUSH_SLOT_FORMAT))
                .isEqualTo("binary-view");
        assertThatThrownBy(
                        () ->
                                valid().setProperty("nearstream.source.push.slot-format", "views")
                                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown slot format 'views'");
        assertThatThrownBy(() -> valid().setPushSlotFormat(null))
                .isInstanceOf(NullPointerException.class);
    }

    @Test
    void theRecordFilterTravelsInTheConfigurationToBothReaders() throws Exception {
        assertThat(valid().build().configuration().get(NearstreamSourceOptions.RECORD_FILTER))
                .isEqualTo("none");
        RecordFilter views = RecordFilter.jsonFieldIn("event_type", "view", "cl\u00efck");
        NearstreamSource<String> source = valid().setRecordFilter(views).build();
        NearstreamSource<String> copy =
                InstantiationUtil.clone(source, getClass().getClassLoader());
        assertThat(
                        RecordFilter.parseSpec(
                                copy.configuration().get(NearstreamSourceOptions.RECORD_FILTER)))
                .isEqualTo(views);
        // A filter given as a property is checked when the source is built, not in a reader.
        assertThatThrownBy(
                        () ->
                                valid().setProperty(
                                                "nearstream.source.record-filter",
                                                "json_field_in:zz")
                                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("json_field_in:zz");
        assertThatThrownBy(() -> valid().setRecordFilter(null))
                .isInstanceOf(NullPointerException.class);
    }

    @Test
    void explainsWrongPushSettings() {
        assertThatThrownBy(() -> valid().setPushSlots(1, 1 << 20).build())
                .hasMessageContaining("Push slots per ring must be from 2 to 1024");
        assertThatThrownBy(() -> valid().setPushSlots(1025, 1 << 20).build())
                .hasMessageContaining("from 2 to 1024");
        // The broker's bounds: 64 KiB to 64 MiB, a multiple of 64.
        assertThatThrownBy(() -> valid().setPushSlots(8, (64 << 10) + 4).build())
                .hasMessageContaining("multiple of 64");
        assertThatThrownBy(() -> valid().setPushSlots(8, 16 << 10).build())
                .hasMessageContaining("from 64 KiB to 64 MiB");
        assertThatThrownBy(() -> valid().setPushSlots(8, (64 << 20) + 64).build())
                .hasMessageContaining("from 64 KiB to 64 MiB");
        assertThat(valid().setPushSlots(2, 64 << 10).build()).isNotNull();
        assertThat(valid().setPushSlots(1024, 64 << 20).build()).isNotNull();
        assertThatThrownBy(() -> valid().setPushConsumerTimeoutMs(10).build())
                .hasMessageContaining("consumer timeout");
    }
}
