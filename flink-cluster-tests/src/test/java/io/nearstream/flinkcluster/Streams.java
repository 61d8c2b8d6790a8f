package io.nearstream.flinkcluster;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NearstreamProducer;
import io.nearstream.client.NearstreamProducerConfig;
import io.nearstream.client.NearstreamPullConsumer;
import io.nearstream.client.NearstreamRecord;
import io.nearstream.client.RecordPosition;
import io.nearstream.client.StartingPosition;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/** Writes text into a stream and reads what readers of a stream see, with the Java client. */
final class Streams {

    private Streams() {}

    /** Appends each line as one record (round-robin over the streamlets) and waits until stored. */
    static void produce(NearstreamClient client, String stream, List<String> lines) {
        try (NearstreamProducer producer =
                new NearstreamProducer(NearstreamProducerConfig.builder(client, stream).build())) {
            List<CompletableFuture<RecordPosition>> sent = new ArrayList<>();
            for (String line : lines) {
                sent.add(producer.send(line.getBytes(StandardCharsets.UTF_8)));
            }
            producer.flush();
            // flush() waits for the outcomes; join() reports a failed one.
            CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new)).join();
        }
    }

    /**
     * A pull consumer of every streamlet from the earliest position, keeping all it has read: with
     * an exactly-once sink, what readers see is what committed transactions hold.
     */
    static final class Reader implements AutoCloseable {
        private final NearstreamPullConsumer consumer;
        private final List<String> records = new ArrayList<>();

        Reader(NearstreamClient client, String stream) {
            this.consumer = NearstreamPullConsumer.builder(client, stream).build();
            int streamlets = client.describeStream(stream).join().streamlets();
            Map<Integer, StartingPosition> starts = new HashMap<>();
            for (int s = 0; s < streamlets; s++) {
                starts.put(s, StartingPosition.earliest());
            }
            consumer.assign(starts);
        }

        /** Reads until at least {@code n} records have come, or the timeout; returns all so far. */
        List<String> readAtLeast(int n, Duration timeout) {
            long deadline = System.nanoTime() + timeout.toNanos();
            while (records.size() < n && System.nanoTime() < deadline) {
                poll(Duration.ofMillis(200));
            }
            return List.copyOf(records);
        }

        /** Reads until nothing has come for {@code quiet}; returns all records so far. */
        List<String> readUntilQuiet(Duration quiet) {
            long quietSince = System.nanoTime();
            while (System.nanoTime() - quietSince < quiet.toNanos()) {
                if (poll(Duration.ofMillis(200)) > 0) {
                    quietSince = System.nanoTime();
                }
            }
            return List.copyOf(records);
        }

        private int poll(Duration timeout) {
            List<NearstreamRecord> batch = consumer.poll(timeout);
            for (NearstreamRecord r : batch) {
                records.add(new String(r.value(), StandardCharsets.UTF_8));
            }
            return batch.size();
        }

        @Override
        public void close() {
            consumer.close();
        }
    }
}
