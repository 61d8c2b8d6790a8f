package io.nearstream.flink.sink.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.StreamConfig;
import io.nearstream.flink.sink.NearstreamRecordSerializationSchema;
import io.nearstream.flink.sink.testutils.ManualProcessingTimeService;
import io.nearstream.flink.sink.testutils.NoTimestampContext;
import io.nearstream.flink.sink.testutils.StreamReader;
import io.nearstream.flink.sink.testutils.TestWriterContext;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The writer batches on the task thread: records reach the broker when a chunk fills, when the
 * linger timer fires in the task's mailbox, or at a flush; against the real broker.
 */
class NearstreamWriterLingerITCase {

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    private static final long LINGER_MS = 50;

    @Test
    void recordsGoOutWhenTheLingerTimerFiresOrAtAFlush() throws Exception {
        BROKER.createStream(StreamConfig.of("linger", 2));
        ProducerSettings settings =
                new ProducerSettings(
                        BROKER.address(), "linger", 64 * 1024, LINGER_MS, 10_000, 5_000, 20);
        TestWriterContext context = TestWriterContext.fresh(0, 1);
        ManualProcessingTimeService timers = context.getProcessingTimeService();
        try (PlainNearstreamWriter<String> writer =
                        new PlainNearstreamWriter<>(
                                context,
                                settings,
                                NearstreamRecordSerializationSchema.<String>builder()
                                        .setValueSerializationSchema(new SimpleStringSchema())
                                        .build(),
                                DeliveryGuarantee.AT_LEAST_ONCE);
                StreamReader reader = new StreamReader(BROKER.client(), "linger")) {
            for (int i = 0; i < 3; i++) {
                writer.write("a" + i, NoTimestampContext.INSTANCE);
            }
            assertThat(timers.pendingTimers()).as("one linger timer for the batch").isEqualTo(1);
            assertThat(reader.poll(Duration.ofMillis(300))).as("held until the timer").isEmpty();

            timers.advanceTo(LINGER_MS - 1);
            assertThat(reader.poll(Duration.ofMillis(200))).isEmpty();
            timers.advanceTo(LINGER_MS);
            assertThat(readAtLeast(reader, 3)).containsExactlyInAnyOrder("a0", "a1", "a2");
            assertThat(timers.pendingTimers()).isZero();

            writer.write("b0", NoTimestampContext.INSTANCE);
            assertThat(timers.pendingTimers()).isEqualTo(1);
            writer.flush(false); // a checkpoint: at least once waits for the broker
            assertThat(reader.poll(Duration.ofSeconds(5))).containsExactly("b0");
            timers.advanceTo(2 * LINGER_MS); // the timer finds nothing left to hand over
            assertThat(reader.poll(Duration.ofMillis(200))).isEmpty();
        }
    }

    private static List<String> readAtLeast(StreamReader reader, int n) {
        List<String> all = new ArrayList<>();
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (all.size() < n && System.nanoTime() < deadline) {
            all.addAll(reader.poll(Duration.ofMillis(200)));
        }
        return all;
    }
}
