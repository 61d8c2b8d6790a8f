package io.nearstream.flink.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.util.InstantiationUtil;
import org.junit.jupiter.api.Test;

/** The builder: defaults, and the messages of {@code build()} for wrong settings. */
class NearstreamSinkBuilderTest {

    private static NearstreamSinkBuilder<String> valid() {
        return NearstreamSink.<String>builder()
                .setBrokers("127.0.0.1:7420")
                .setStream("orders")
                .setRecordSerializer(
                        NearstreamRecordSerializationSchema.<String>builder()
                                .setValueSerializationSchema(new SimpleStringSchema())
                                .build());
    }

    @Test
    void buildsWithDefaultsAndIsSerializable() throws Exception {
        NearstreamSink<String> sink = valid().build();
        assertThat(sink.getDeliveryGuarantee()).isEqualTo(DeliveryGuarantee.AT_LEAST_ONCE);
        NearstreamSink<String> copy = InstantiationUtil.clone(sink, getClass().getClassLoader());
        assertThat(copy.getDeliveryGuarantee()).isEqualTo(DeliveryGuarantee.AT_LEAST_ONCE);
    }

    @Test
    void exactlyOnceNeedsAUsablePrefix() {
        assertThatThrownBy(
                        () -> valid().setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE).build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("setTransactionalIdPrefix");
        assertThatThrownBy(
                        () ->
                                valid().setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                                        .setTransactionalIdPrefix("")
                                        .build())
                .hasMessageContaining("prefix is empty");
        assertThatThrownBy(
                        () ->
                                valid().setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                                        .setTransactionalIdPrefix("x".repeat(250))
                                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("cannot make valid ids")
                .hasMessageContaining("1 to 255");
        assertThatThrownBy(
                        () ->
                                valid().setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                                        .setTransactionalIdPrefix("tab\there")
                                        .build())
                .hasMessageContaining("control characters");
        NearstreamSink<String> sink =
                valid().setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                        .setTransactionalIdPrefix("x".repeat(243))
                        .build();
        assertThat(sink.getDeliveryGuarantee()).isEqualTo(DeliveryGuarantee.EXACTLY_ONCE);
    }

    @Test
    void missingOrWrongSettingsAreExplained() {
        assertThatThrownBy(() -> NearstreamSink.<String>builder().setStream("s").build())
                .hasMessageContaining("No broker set");
        assertThat(valid().setBrokers("a:1", "b:2").build()).isNotNull(); // a cluster
        assertThat(
                        valid().setBrokers("a:1,b:2")
                                .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                                .setTransactionalIdPrefix("job")
                                .build()
                                .getDeliveryGuarantee())
                .as("exactly once over a cluster")
                .isEqualTo(DeliveryGuarantee.EXACTLY_ONCE);
        assertThatThrownBy(() -> valid().setBrokers("nohost").build())
                .hasMessageContaining("host:port");
        assertThatThrownBy(() -> valid().setStream(".hidden").build())
                .hasMessageContaining("Stream name '.hidden' is invalid");
        assertThatThrownBy(
                        () ->
                                NearstreamSink.<String>builder()
                                        .setBrokers("127.0.0.1:1")
                                        .setStream("s")
                                        .build())
                .hasMessageContaining("No record serializer set");
        assertThatThrownBy(() -> valid().setBatchSizeBytes(10).build())
                .hasMessageContaining("batchSizeBytes");
        assertThatThrownBy(() -> valid().setDeliveryTimeoutMs(0).build())
                .hasMessageContaining("deliveryTimeout");
        assertThatThrownBy(() -> valid().setRequestTimeoutMs(-1).build())
                .hasMessageContaining("requestTimeout");
    }
}
