package io.nearstream.flink.sink.testutils;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NearstreamPullConsumer;
import io.nearstream.client.NearstreamRecord;
import io.nearstream.client.StartingPosition;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads what readers of a stream see, as a pull consumer from the earliest position of every
 * streamlet: what the sinks' tests check their output with.
 */
public final class StreamReader implements AutoCloseable {

    private final NearstreamPullConsumer consumer;

    public StreamReader(NearstreamClient client, String stream) {
        this.consumer = NearstreamPullConsumer.builder(client, stream).build();
        int streamlets = client.describeStream(stream).join().streamlets();
        Map<Integer, StartingPosition> starts = new HashMap<>();
        for (int s = 0; s < streamlets; s++) {
            starts.put(s, StartingPosition.earliest());
        }
        consumer.assign(starts);
    }

    /** The records of one poll, as UTF-8 strings. */
    public List<String> poll(Duration timeout) {
        List<String> values = new ArrayList<>();
        for (NearstreamRecord r : consumer.poll(timeout)) {
            values.add(new String(r.value(), StandardCharsets.UTF_8));
        }
        return values;
    }

    /**
     * Every record until none has come for {@code quiet}: once the writers are done, all there is
     * (a duplicate would come within the same reads as the original).
     */
    public List<String> readUntilQuiet(Duration quiet) {
        List<String> all = new ArrayList<>();
        long quietSince = System.nanoTime();
        while (System.nanoTime() - quietSince < quiet.toNanos()) {
            List<String> batch = poll(Duration.ofMillis(200));
            if (!batch.isEmpty()) {
                all.addAll(batch);
                quietSince = System.nanoTime();
            }
        }
        return all;
    }

    /** All records of a stream whose writers are done. */
    public static List<String> readAll(NearstreamClient client, String stream) {
        try (StreamReader reader = new StreamReader(client, stream)) {
            return reader.readUntilQuiet(Duration.ofSeconds(2));
        }
    }

    @Override
    public void close() {
        consumer.close();
    }
}
