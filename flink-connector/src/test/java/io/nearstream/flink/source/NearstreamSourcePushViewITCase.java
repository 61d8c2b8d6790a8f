package io.nearstream.flink.source;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.Durability;
import io.nearstream.client.SlotFormat;
import io.nearstream.client.StreamConfig;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import io.nearstream.flink.source.testutils.NearstreamTestData;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Push mode with {@code binary_view} slots against the real broker: records of at most 12 bytes
 * (inline in their views) and longer ones (read from the broker's segment files or from the slot),
 * written before the job starts and while it runs, come out exactly once each.
 */
class NearstreamSourcePushViewITCase {

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    @RegisterExtension
    static final MiniClusterExtension FLINK =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    private static final int STREAMLETS = 2;

    private static String newStream() {
        String name = "push-view-" + Long.toHexString(ThreadLocalRandom.current().nextLong());
        BROKER.createStream(
                new StreamConfig(name, STREAMLETS, 16 * 1024, 4, 1, Durability.NONE, -1, -1));
        return name;
    }

    /** Every third record is inline-sized (at most 12 bytes), the others 40 to 400 bytes. */
    private static List<String> records(String batch, int streamlet, int count) {
        List<String> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            String id = batch + streamlet + "-" + i;
            out.add(i % 3 == 0 ? id : id + "-" + "x".repeat(40 + (i * 37) % 360));
        }
        return out;
    }

    private static List<String> write(String stream, String batch, int count) {
        List<String> written = new ArrayList<>();
        for (int s = 0; s < STREAMLETS; s++) {
            List<String> rs = records(batch, s, count);
            NearstreamTestData.append(BROKER.client(), stream, s, rs, 37, 1_000);
            written.addAll(rs);
        }
        return written;
    }

    private static Predicate<String> ofStreamlet(int s) {
        return v -> v.startsWith("a" + s + "-") || v.startsWith("b" + s + "-");
    }

    private static long stat(String name) throws Exception {
        return BROKER.client().stats().get(30, TimeUnit.SECONDS).getOrDefault(name, 0L);
    }

    @Test
    void viewSlotsDeliverEveryRecordWrittenBeforeAndDuringTheJob() throws Exception {
        String stream = newStream();
        List<String> expected = new ArrayList<>(write(stream, "a", 2_000));
        assertThat(expected).anyMatch(r -> r.length() <= 12).anyMatch(r -> r.length() > 12);

        NearstreamSource<String> source =
                NearstreamSource.<String>builder()
                        .setBrokers(BROKER.address())
                        .setStream(stream)
                        .setReadMode(ReadMode.PUSH)
                        .setPushSlots(4, 64 * 1024)
                        .setPushSlotFormat(SlotFormat.BINARY_VIEW)
                        .setDeserializer(NearstreamRecordDeserializationSchema.utf8())
                        .build();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(STREAMLETS);
        long pushedBefore = stat("nearstream_push_records_total");
        long viewSlotsBefore = stat("nearstream_push_view_slots_total");
        long filesBefore = stat("nearstream_push_segment_files_created_total");
        List<String> out = new ArrayList<>();
        try (CloseableIterator<String> it =
                env.fromSource(source, WatermarkStrategy.noWatermarks(), "nearstream-view")
                        .executeAndCollect()) {
            while (out.size() < expected.size()) {
                out.add(it.next());
            }
            // The job is running and has read everything written before it: write more.
            expected.addAll(write(stream, "b", 1_500));
            while (out.size() < expected.size()) {
                out.add(it.next());
            }
        }

        assertThat(out).hasSize(expected.size()).containsExactlyInAnyOrderElementsOf(expected);
        for (int s = 0; s < STREAMLETS; s++) {
            Predicate<String> ofStreamlet = ofStreamlet(s);
            assertThat(out.stream().filter(ofStreamlet).toList())
                    .as("streamlet %s in order", s)
                    .isEqualTo(expected.stream().filter(ofStreamlet).toList());
        }
        // They came through the rings, not through fetches.
        assertThat(stat("nearstream_push_records_total") - pushedBefore)
                .isGreaterThanOrEqualTo(expected.size());
        // In view slots, pointing into segment files made for the stream once it was subscribed.
        assertThat(stat("nearstream_push_view_slots_total")).isGreaterThan(viewSlotsBefore);
        assertThat(stat("nearstream_push_segment_files_created_total")).isGreaterThan(filesBefore);
    }
}
