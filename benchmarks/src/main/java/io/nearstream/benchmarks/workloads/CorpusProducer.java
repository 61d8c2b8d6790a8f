package io.nearstream.benchmarks.workloads;

import io.nearstream.benchmarks.jobs.Flags;
import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NearstreamProducer;
import io.nearstream.client.NearstreamProducerConfig;
import io.nearstream.client.NettyNearstreamClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Appends a text corpus to a Nearstream stream for the word-count workloads: the text cut into
 * records by {@link TextRecords}, sent {@code --repeat} times in order, spread round-robin over the
 * streamlets by a {@link NearstreamProducer}. Creates the stream when it does not exist. Prints one
 * JSON line with what it sent and how fast. With {@code --target kafka} the records go to the Kafka
 * topic {@code --stream} (created beforehand) at bootstrap servers {@code --broker} instead,
 * through Kafka's idempotent producer (the counts are checked exactly, so no retried request may be
 * written twice), spread over the partitions by Kafka's default partitioner.
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar io.nearstream.benchmarks.workloads.CorpusProducer \
 *     --broker 127.0.0.1:7420 --stream text --streamlets 4 \
 *     --corpus "$(scripts/fetch-corpus.sh)" --record-bytes 2048 --repeat 10
 * </pre>
 */
public final class CorpusProducer {

    private static final Set<String> FLAGS =
            Set.of(
                    "broker",
                    "stream",
                    "streamlets",
                    "corpus",
                    "record-bytes",
                    "repeat",
                    "batch-bytes",
                    "linger-ms",
                    "target");

    private CorpusProducer() {}

    /** What {@link #produce} sent. */
    public record Result(long records, long bytes, double seconds) {
        public String toJson() {
            return String.format(
                    Locale.ROOT,
                    "{\"records\":%d,\"bytes\":%d,\"seconds\":%.3f,\"records_per_s\":%.0f,"
                            + "\"mb_per_s\":%.2f}",
                    records,
                    bytes,
                    seconds,
                    records / seconds,
                    bytes / seconds / 1e6);
        }
    }

    public static void main(String[] args) throws Exception {
        Flags flags = new Flags(args, FLAGS);
        String broker = flags.required("broker");
        String stream = flags.required("stream");
        int streamlets = flags.intValue("streamlets", 4, 1);
        Path corpus = Path.of(flags.required("corpus"));
        if (!Files.isRegularFile(corpus)) {
            throw new IllegalArgumentException(
                    "--corpus " + corpus + " is not a file; scripts/fetch-corpus.sh fetches it");
        }
        int recordBytes = flags.intValue("record-bytes", TextRecords.DEFAULT_RECORD_BYTES, 1);
        int repeat = flags.intValue("repeat", 1, 1);
        int batchBytes = flags.intValue("batch-bytes", 64 * 1024, 1);
        long lingerMs = flags.longValue("linger-ms", 5, 0);
        String target = flags.string("target", "nearstream");
        if (!target.equals("nearstream") && !target.equals("kafka")) {
            throw new IllegalArgumentException("--target is nearstream or kafka, got " + target);
        }
        List<byte[]> records = TextRecords.read(corpus, recordBytes);
        if (target.equals("kafka")) {
            try (EventSink sink = EventSink.kafka(broker, stream, batchBytes, lingerMs, true)) {
                System.out.println(produce(sink, records, repeat).toJson());
            }
            return;
        }
        try (NearstreamClient client = NettyNearstreamClient.connect(broker)) {
            StreamSetup.ensure(client, stream, streamlets);
            NearstreamProducerConfig config =
                    NearstreamProducerConfig.builder(client, stream)
                            .batchSizeBytes(batchBytes)
                            .linger(java.time.Duration.ofMillis(lingerMs))
                            .build();
            System.out.println(produce(config, records, repeat).toJson());
        }
    }

    /**
     * Sends {@code records} {@code repeat} times through a Nearstream producer and waits until all
     * are stored; fails with the first record that could not be.
     */
    public static Result produce(NearstreamProducerConfig config, List<byte[]> records, int repeat)
            throws Exception {
        try (EventSink sink = EventSink.nearstream(config)) {
            return produce(sink, records, repeat);
        }
    }

    /**
     * Sends {@code records} {@code repeat} times to {@code sink} and waits until all are
     * acknowledged; fails with the first record that could not be stored.
     */
    public static Result produce(EventSink sink, List<byte[]> records, int repeat)
            throws Exception {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        java.util.function.Consumer<Throwable> onFailure = e -> failure.compareAndSet(null, e);
        long bytes = 0;
        long start = System.nanoTime();
        for (int r = 0; r < repeat && failure.get() == null; r++) {
            for (byte[] record : records) {
                sink.send(record, onFailure);
                bytes += record.length;
            }
        }
        sink.flush();
        if (failure.get() != null) {
            throw new IllegalStateException("a record was not stored", failure.get());
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        return new Result((long) records.size() * repeat, bytes, seconds);
    }
}
