package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.testing.NearstreamBrokerExtension;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link NearstreamProducer} → broker → {@link NearstreamPullConsumer}, end to end. */
class ProducerConsumerITCase {

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    /** 16-byte record: streamlet-independent sequence number and a fixed pattern. */
    private static byte[] record(long n) {
        return ByteBuffer.allocate(16).putLong(n).putLong(~n).array();
    }

    private static long number(byte[] value) {
        ByteBuffer b = ByteBuffer.wrap(value);
        long n = b.getLong();
        assertThat(b.getLong()).isEqualTo(~n);
        return n;
    }

    @Test
    void everyRecordExactlyOnceAndInOrderPerStreamlet() throws Exception {
        int streamlets = 4;
        int total = 200_000;
        // Small segments so the consumer crosses many segments and groups.
        BROKER.createStream(
                new StreamConfig("pc.bulk", streamlets, 256 * 1024, 4, 1, Durability.NONE, -1, -1));
        NearstreamProducerConfig config =
                NearstreamProducerConfig.builder(BROKER.address(), "pc.bulk")
                        .batchSizeBytes(16 * 1024)
                        .linger(Duration.ofMillis(2))
                        .build();
        List<CompletableFuture<RecordPosition>> futures = new ArrayList<>(total);
        try (NearstreamProducer producer = new NearstreamProducer(config)) {
            assertThat(producer.streamlets()).isEqualTo(streamlets);
            for (int i = 0; i < total; i++) {
                futures.add(producer.send(record(i)));
            }
            producer.flush();
            assertThat(futures).allMatch(CompletableFuture::isDone);
        }
        RecordPosition last = futures.get(total - 1).join();
        assertThat(last.streamlet()).isEqualTo((total - 1) % streamlets);

        long[] lastSeen = new long[streamlets];
        java.util.Arrays.fill(lastSeen, -1);
        int count = 0;
        try (NearstreamPullConsumer consumer =
                NearstreamPullConsumer.builder(BROKER.address(), "pc.bulk")
                        .maxBytesPerStreamlet(256 * 1024)
                        .maxWait(Duration.ofMillis(100))
                        .build()) {
            for (int s = 0; s < streamlets; s++) {
                consumer.assign(s, StartingPosition.earliest());
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (count < total && System.nanoTime() < deadline) {
                for (NearstreamRecord r : consumer.poll(Duration.ofMillis(500))) {
                    long n = number(r.value());
                    // Round-robin: record n went to streamlet n mod 4; order kept per streamlet.
                    assertThat(n % streamlets).isEqualTo(r.streamlet());
                    long expected =
                            lastSeen[r.streamlet()] < 0
                                    ? r.streamlet()
                                    : lastSeen[r.streamlet()] + streamlets;
                    assertThat(n).isEqualTo(expected);
                    lastSeen[r.streamlet()] = n;
                    count++;
                }
            }
            assertThat(count).isEqualTo(total);
            assertThat(consumer.poll(Duration.ofMillis(200))).isEmpty();
            // The committed position of streamlet 0 is past its last chunk: nothing to reread.
            ReadPosition p = consumer.position(0);
            assertThat(p.recordsToSkip()).isZero();
            assertThat(p.chunk()).isGreaterThan(futures.get(total - 4).join().chunk());
        }
    }

    /**
     * The callback form: each record's callback reports the position it was stored at (the record
     * found there is that record), also when other callbacks throw, and a record the broker refuses
     * reports the refusal.
     */
    @Test
    void callbacksReportEachRecordsPositionOrWhyItWasNotStored() throws Exception {
        int total = 20_000;
        BROKER.createStream("pc.callbacks", 2);
        RecordPosition[] stored = new RecordPosition[total];
        AtomicInteger calls = new AtomicInteger();
        List<Exception> errors = new java.util.concurrent.CopyOnWriteArrayList<>();
        NearstreamProducerConfig config =
                NearstreamProducerConfig.builder(BROKER.address(), "pc.callbacks")
                        .batchSizeBytes(4 * 1024)
                        .build();
        try (NearstreamProducer producer = new NearstreamProducer(config)) {
            for (int i = 0; i < total; i++) {
                int n = i;
                producer.send(
                        record(n),
                        (pos, error) -> {
                            if (error != null) {
                                errors.add(error);
                            }
                            stored[n] = pos;
                            calls.incrementAndGet();
                            if (n % 7 == 0) { // must not keep the other callbacks from running
                                throw new IllegalStateException("user callback " + n + " threw");
                            }
                        });
            }
            producer.flush();
        }
        assertThat(errors).isEmpty();
        assertThat(calls.get()).isEqualTo(total); // once each
        Map<RecordPosition, Long> found = new java.util.HashMap<>();
        try (NearstreamPullConsumer c =
                NearstreamPullConsumer.builder(BROKER.client(), "pc.callbacks").build()) {
            c.assign(Map.of(0, StartingPosition.earliest(), 1, StartingPosition.earliest()));
            for (int polls = 0; found.size() < total && polls < 200; polls++) {
                for (NearstreamRecord r : c.poll(Duration.ofMillis(200))) {
                    found.put(
                            new RecordPosition(r.streamlet(), r.chunk(), r.index()),
                            number(r.value()));
                }
            }
        }
        assertThat(found).hasSize(total);
        for (int i = 0; i < total; i++) {
            assertThat(found.get(stored[i])).as("record %d at %s", i, stored[i]).isEqualTo(i);
        }

        BROKER.createStream("pc.callbacks-gone", 1);
        CompletableFuture<Exception> refused = new CompletableFuture<>();
        try (NearstreamProducer producer =
                new NearstreamProducer(
                        NearstreamProducerConfig.builder(BROKER.address(), "pc.callbacks-gone")
                                .deliveryTimeout(Duration.ofSeconds(10))
                                .build())) {
            BROKER.client().deleteStream("pc.callbacks-gone").join();
            producer.send(record(1), (pos, error) -> refused.complete(error));
            CompletableFuture<Exception> noStreamlet = new CompletableFuture<>();
            producer.sendTo(5, record(2), (pos, error) -> noStreamlet.complete(error));
            assertThat(noStreamlet).isDone(); // at once, on the caller's thread
            assertThat(noStreamlet.join()).hasMessageContaining("streamlet 5");
            producer.flush();
        }
        assertThat(refused.get(30, TimeUnit.SECONDS))
                .isInstanceOf(NearstreamClientException.class)
                .hasMessageContaining("STREAM_NOT_FOUND");
    }

    @Test
    void producersMadeFromOneConfigHaveTheirOwnIdsAndLoseNothing() {
        BROKER.createStream("pc.shared-config", 1);
        NearstreamProducerConfig config =
                NearstreamProducerConfig.builder(BROKER.client(), "pc.shared-config")
                        .batchSizeBytes(200)
                        .build();
        try (NearstreamProducer a = new NearstreamProducer(config);
                NearstreamProducer b = new NearstreamProducer(config)) {
            assertThat(a.producerId()).isNotZero().isNotEqualTo(b.producerId());
            // Same sequences from both: with a shared id the broker would drop one side's chunks.
            for (int i = 0; i < 100; i++) {
                a.send(record(i));
                b.send(record(1000 + i));
            }
        }
        List<Long> read = new ArrayList<>();
        try (NearstreamPullConsumer c =
                NearstreamPullConsumer.builder(BROKER.client(), "pc.shared-config").build()) {
            c.assign(0, StartingPosition.earliest());
            for (int polls = 0; read.size() < 200 && polls < 100; polls++) {
                c.poll(Duration.ofMillis(200)).forEach(r -> read.add(number(r.value())));
            }
        }
        assertThat(read).hasSize(200);
    }

    @Test
    void resumeFromPositionSkipsRecordsAlreadyRead() {
        BROKER.createStream("pc.resume", 1);
        NearstreamProducerConfig config =
                NearstreamProducerConfig.builder(BROKER.client(), "pc.resume")
                        .batchSizeBytes(200)
                        .build();
        try (NearstreamProducer producer = new NearstreamProducer(config)) {
            for (int i = 0; i < 50; i++) {
                producer.send(record(i));
            }
        }
        List<Long> firstPart = new ArrayList<>();
        NearstreamRecord cut;
        try (NearstreamPullConsumer c =
                NearstreamPullConsumer.builder(BROKER.client(), "pc.resume").build()) {
            c.assign(0, StartingPosition.earliest());
            List<NearstreamRecord> records = new ArrayList<>();
            while (records.size() < 50) {
                records.addAll(c.poll(Duration.ofSeconds(1)));
            }
            cut = records.get(17);
            for (int i = 0; i < 17; i++) {
                firstPart.add(number(records.get(i).value()));
            }
            assertThat(cut.index()).isPositive(); // mid-chunk: 200-byte chunks hold several
        }
        // Resume at record 17 = (its chunk, its index): the rest comes exactly once.
        try (NearstreamPullConsumer c =
                NearstreamPullConsumer.builder(BROKER.client(), "pc.resume").build()) {
            c.assign(0, StartingPosition.at(cut.chunk(), cut.index()));
            assertThat(c.position(0)).isEqualTo(new ReadPosition(cut.chunk(), cut.index()));
            List<Long> rest = new ArrayList<>();
            while (rest.size() < 33) {
                for (NearstreamRecord r : c.poll(Duration.ofSeconds(1))) {
                    rest.add(number(r.value()));
                }
            }
            List<Long> all = new ArrayList<>(firstPart);
            all.addAll(rest);
            for (int i = 0; i < 50; i++) {
                assertThat(all.get(i)).isEqualTo(i);
            }
        }
    }

    @Test
    void latestAndTimestampStarts() throws Exception {
        BROKER.createStream("pc.starts", 2);
        NearstreamProducerConfig config =
                NearstreamProducerConfig.builder(BROKER.client(), "pc.starts")
                        .linger(Duration.ZERO)
                        .build();
        try (NearstreamProducer producer = new NearstreamProducer(config)) {
            producer.sendTo(0, record(1)).join();
            producer.sendTo(1, record(2)).join();
            Thread.sleep(20);
            long between = System.currentTimeMillis();
            Thread.sleep(20);
            producer.sendTo(0, record(3)).join();

            try (NearstreamPullConsumer latest =
                            NearstreamPullConsumer.builder(BROKER.client(), "pc.starts").build();
                    NearstreamPullConsumer byTime =
                            NearstreamPullConsumer.builder(BROKER.client(), "pc.starts").build()) {
                latest.assign(Map.of(0, StartingPosition.latest(), 1, StartingPosition.latest()));
                latest.position(0); // resolves LATEST now, before the next send
                byTime.assign(
                        Map.of(
                                0, StartingPosition.timestamp(between),
                                1, StartingPosition.timestamp(between)));
                producer.sendTo(1, record(4)).join();

                List<Long> fromLatest = new ArrayList<>();
                while (fromLatest.size() < 1) {
                    latest.poll(Duration.ofSeconds(1))
                            .forEach(r -> fromLatest.add(number(r.value())));
                }
                assertThat(fromLatest).containsExactly(4L);

                List<Long> fromTime = new ArrayList<>();
                while (fromTime.size() < 2) {
                    byTime.poll(Duration.ofSeconds(1))
                            .forEach(r -> fromTime.add(number(r.value())));
                }
                assertThat(fromTime).containsExactlyInAnyOrder(3L, 4L);
            }
        }
    }

    @Test
    void positionOutOfRangeIsReportedNotSkipped() {
        BROKER.createStream("pc.range", 1);
        try (NearstreamPullConsumer c =
                NearstreamPullConsumer.builder(BROKER.client(), "pc.range").build()) {
            c.seek(0, new Position(7, 7, 0), 0);
            assertThatThrownBy(() -> c.poll(Duration.ofMillis(500)))
                    .isInstanceOf(NearstreamClientException.class)
                    .satisfies(
                            e ->
                                    assertThat(((NearstreamClientException) e).status())
                                            .isEqualTo(StatusCode.POSITION_OUT_OF_RANGE));
        }
    }

    @Test
    void idempotentRetriesAcrossBrokerRestartStoreNoDuplicates() throws Exception {
        int streamlets = 2;
        int total = 6_000;
        BROKER.createStream(StreamConfig.of("pc.sync", streamlets).withDurability(Durability.SYNC));
        NearstreamProducerConfig config =
                NearstreamProducerConfig.builder(BROKER.address(), "pc.sync")
                        .clientOptions(
                                NearstreamClientOptions.builder()
                                        .requestTimeout(Duration.ofSeconds(2))
                                        .build())
                        .batchSizeBytes(600)
                        .linger(Duration.ZERO)
                        .retryBackoff(Duration.ofMillis(50))
                        .build();
        List<CompletableFuture<RecordPosition>> futures = new ArrayList<>();
        try (NearstreamProducer producer = new NearstreamProducer(config)) {
            for (int i = 0; i < total; i++) {
                futures.add(producer.send(record(i)));
                if (i == total / 3) {
                    // Wait until some chunks are acknowledged, then kill -9 mid-produce.
                    futures.get(i / 2).get(30, TimeUnit.SECONDS);
                    BROKER.restart();
                }
            }
            producer.flush();
        }
        for (CompletableFuture<RecordPosition> f : futures) {
            assertThat(f).isCompleted(); // every record acknowledged despite the restart
        }
        long[] next = {0, 1};
        int count = 0;
        try (NearstreamPullConsumer c =
                NearstreamPullConsumer.builder(BROKER.address(), "pc.sync").build()) {
            c.assign(Map.of(0, StartingPosition.earliest(), 1, StartingPosition.earliest()));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (count < total && System.nanoTime() < deadline) {
                for (NearstreamRecord r : c.poll(Duration.ofMillis(300))) {
                    long n = number(r.value());
                    assertThat(n).as("streamlet %s", r.streamlet()).isEqualTo(next[r.streamlet()]);
                    next[r.streamlet()] += streamlets;
                    count++;
                }
            }
            assertThat(c.poll(Duration.ofMillis(200))).as("no duplicates after the last").isEmpty();
        }
        assertThat(count).isEqualTo(total);
    }

    @Test
    void lostResponseIsRetriedWithTheSameSequenceAndDeduplicated() throws Exception {
        BROKER.createStream("pc.lost", 2);
        int total = 2_000;
        try (DroppingProxy proxy = new DroppingProxy(BROKER.host(), BROKER.port())) {
            NearstreamProducerConfig config =
                    NearstreamProducerConfig.builder(proxy.address(), "pc.lost")
                            .batchSizeBytes(400)
                            .linger(Duration.ZERO)
                            .retryBackoff(Duration.ofMillis(20))
                            .build();
            List<CompletableFuture<RecordPosition>> futures = new ArrayList<>();
            try (NearstreamProducer producer = new NearstreamProducer(config)) {
                for (int i = 0; i < total; i++) {
                    futures.add(producer.send(record(i)));
                    if (i == 500 || i == 1500) {
                        futures.get(i - 100).get(10, TimeUnit.SECONDS);
                        proxy.dropNextResponse();
                    }
                }
                producer.flush();
            }
            assertThat(proxy.dropped()).isEqualTo(2);
            assertThat(futures).allSatisfy(f -> assertThat(f).isCompleted());
        }
        // The chunks of the lost responses were stored once; their resends were duplicates.
        assertThat(BROKER.client().stats().join().get("nearstream_append_duplicates_total"))
                .isGreaterThanOrEqualTo(2L);
        long[] next = {0, 1};
        int count = 0;
        try (NearstreamPullConsumer c =
                NearstreamPullConsumer.builder(BROKER.client(), "pc.lost").build()) {
            c.assign(Map.of(0, StartingPosition.earliest(), 1, StartingPosition.earliest()));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (count < total && System.nanoTime() < deadline) {
                for (NearstreamRecord r : c.poll(Duration.ofMillis(300))) {
                    assertThat(number(r.value())).isEqualTo(next[r.streamlet()]);
                    next[r.streamlet()] += 2;
                    count++;
                }
            }
            assertThat(c.poll(Duration.ofMillis(200))).isEmpty();
        }
        assertThat(count).isEqualTo(total);
    }
}
