package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.FakeNearstreamClient.AppendCall;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Batching, sequencing and retries of {@link NearstreamProducer}, against a scripted client. */
class NearstreamProducerTest {

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static NearstreamProducerConfig.Builder config(FakeNearstreamClient client) {
        return NearstreamProducerConfig.builder(client, "s")
                .producerId(42)
                .linger(Duration.ofMillis(1))
                .retryBackoff(Duration.ofMillis(1));
    }

    @Test
    void flushSendsOneChunkPerStreamletInOneRequest() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(3);
        NearstreamProducer p =
                new NearstreamProducer(config(client).linger(Duration.ofSeconds(10)).build());
        List<CompletableFuture<RecordPosition>> fs = new ArrayList<>();
        for (int i = 0; i < 9; i++) {
            fs.add(p.send(bytes("r" + i)));
        }
        CompletableFuture<Void> flushed = CompletableFuture.runAsync(p::flush);
        AppendCall call = client.nextAppend();
        assertThat(call.size()).isEqualTo(3);
        assertThat(call.streamlets).containsExactlyInAnyOrder(0, 1, 2);
        for (int i = 0; i < 3; i++) {
            ChunkHeader h = call.header(i);
            assertThat(h.recordCount()).isEqualTo(3);
            assertThat(h.producerId()).isEqualTo(42);
            assertThat(h.sequence()).isZero();
        }
        assertThat(flushed).isNotDone();
        call.ok();
        flushed.get(5, TimeUnit.SECONDS);
        for (int i = 0; i < 9; i++) {
            RecordPosition pos = fs.get(i).join();
            assertThat(pos.streamlet()).isEqualTo(i % 3); // round-robin
            assertThat(pos.index()).isEqualTo(i / 3);
        }
        p.close();
        assertThat(client.closed).isFalse(); // not the producer's client
    }

    @Test
    void fullBatchIsSentWithoutWaitingForLinger() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(1);
        try (NearstreamProducer p =
                new NearstreamProducer(
                        config(client)
                                .linger(Duration.ofSeconds(30))
                                .batchSizeBytes(Chunks.HEADER_BYTES + 3 * 14)
                                .build())) {
            for (int i = 0; i < 3; i++) {
                p.send(new byte[10]);
            }
            AppendCall call = client.nextAppend();
            assertThat(call.header(0).recordCount()).isEqualTo(3);
            call.ok();
        }
    }

    @Test
    void oneChunkInFlightPerStreamletAndSequencesGrowByOne() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(1);
        try (NearstreamProducer p =
                new NearstreamProducer(config(client).linger(Duration.ZERO).build())) {
            p.send(bytes("a"));
            AppendCall first = client.nextAppend();
            p.send(bytes("b"));
            p.send(bytes("c"));
            // b and c wait behind a (same streamlet) and then travel as one chunk.
            assertThat(client.pollAppend(100)).isNull();
            first.ok();
            AppendCall second = client.nextAppend();
            assertThat(second.header(0).recordCount()).isEqualTo(2);
            assertThat(second.header(0).sequence()).isEqualTo(1);
            second.ok();
            p.send(bytes("d"));
            AppendCall third = client.nextAppend();
            assertThat(third.header(0).sequence()).isEqualTo(2);
            third.ok();
        }
    }

    @Test
    void retriesResendTheSameChunkWithTheSameSequence() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(2);
        try (NearstreamProducer p =
                new NearstreamProducer(config(client).linger(Duration.ZERO).build())) {
            CompletableFuture<RecordPosition> a = p.sendTo(0, bytes("a"));
            CompletableFuture<RecordPosition> b = p.sendTo(1, bytes("b"));
            AppendCall call = client.nextAppend();
            List<byte[]> sent = new ArrayList<>(call.chunks);
            if (call.size() == 1) {
                // b may have gone in a request of its own; answer it and keep a's.
                AppendCall other = client.nextAppend();
                sent.addAll(other.chunks);
                other.fail(StatusCode.IO_ERROR);
            }
            call.fail(StatusCode.IO_ERROR); // connection lost: outcome unknown, retry
            Set<String> resent = new HashSet<>();
            List<AppendCall> retries = new ArrayList<>();
            while (resent.size() < sent.size()) {
                AppendCall r = client.nextAppend();
                retries.add(r);
                for (byte[] c : r.chunks) {
                    resent.add(java.util.Arrays.toString(c));
                }
            }
            Set<String> original = new HashSet<>();
            sent.forEach(c -> original.add(java.util.Arrays.toString(c)));
            assertThat(resent).isEqualTo(original); // byte for byte, same sequences
            // A per-entry retriable status is retried too; then success.
            AppendCall last = retries.get(retries.size() - 1);
            for (AppendCall r : retries) {
                if (r != last) {
                    r.ok();
                }
            }
            last.answer(StatusCode.STORAGE_ERROR);
            client.nextAppend().ok();
            assertThat(a.get(5, TimeUnit.SECONDS).streamlet()).isZero();
            assertThat(b.get(5, TimeUnit.SECONDS).streamlet()).isOne();
        }
    }

    @Test
    void fatalErrorFailsTheRecordsAndTheNextChunkReusesTheSequence() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(1);
        try (NearstreamProducer p =
                new NearstreamProducer(config(client).linger(Duration.ZERO).build())) {
            CompletableFuture<RecordPosition> a = p.send(bytes("a"));
            client.nextAppend().answer(StatusCode.CHUNK_TOO_LARGE);
            assertThatThrownBy(() -> a.get(5, TimeUnit.SECONDS))
                    .hasCauseInstanceOf(NearstreamClientException.class)
                    .hasMessageContaining("CHUNK_TOO_LARGE");
            p.send(bytes("b"));
            AppendCall next = client.nextAppend();
            assertThat(next.header(0).sequence()).isZero(); // "a" was never stored
            next.ok();
        }
    }

    @Test
    void chunkLostWithUnknownOutcomeHandsItsSequenceOnWhenTheBrokerReportsAGap() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(1);
        try (NearstreamProducer p =
                new NearstreamProducer(config(client).linger(Duration.ZERO).retries(0).build())) {
            CompletableFuture<RecordPosition> a = p.send(bytes("a"));
            client.nextAppend().fail(StatusCode.IO_ERROR); // no retries left: a fails
            assertThatThrownBy(() -> a.get(5, TimeUnit.SECONDS)).hasMessageContaining("IO_ERROR");
            CompletableFuture<RecordPosition> b = p.send(bytes("b"));
            AppendCall guess = client.nextAppend();
            assertThat(guess.header(0).sequence()).isEqualTo(1); // a may have been stored
            guess.answer(StatusCode.OUT_OF_ORDER_SEQUENCE); // it was not
            AppendCall takeOver = client.nextAppend();
            assertThat(takeOver.header(0).sequence()).isZero();
            takeOver.ok();
            assertThat(b.get(5, TimeUnit.SECONDS).index()).isZero();
        }
    }

    @Test
    void producerIdZeroDisablesSequences() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(1);
        try (NearstreamProducer p =
                new NearstreamProducer(
                        config(client).producerId(0).linger(Duration.ZERO).build())) {
            for (int i = 0; i < 3; i++) {
                p.send(bytes("x"));
                AppendCall c = client.nextAppend();
                assertThat(c.header(0).producerId()).isZero();
                assertThat(c.header(0).sequence()).isZero();
                c.ok();
            }
        }
    }

    @Test
    void deliveryTimeoutFailsRecordsWhileTheBrokerIsUnreachable() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(1);
        try (NearstreamProducer p =
                new NearstreamProducer(
                        config(client)
                                .linger(Duration.ZERO)
                                .retryBackoff(Duration.ofMillis(20))
                                .deliveryTimeout(Duration.ofMillis(200))
                                .build())) {
            CompletableFuture<RecordPosition> a = p.send(bytes("a"));
            long t0 = System.nanoTime();
            while (!a.isDone() && System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(5)) {
                AppendCall c = client.pollAppend(50);
                if (c != null) {
                    c.fail(StatusCode.IO_ERROR);
                }
            }
            assertThatThrownBy(a::join)
                    .hasMessageContaining("IO_ERROR")
                    .hasMessageContaining("not delivered within delivery.timeout")
                    .as(
                            "the expiry says why the last attempt failed (over a cluster: which broker)")
                    .hasMessageContaining("the last attempt failed: IO_ERROR: scripted");
        }
    }

    @Test
    void closeWithTimeoutFailsWhatWasNotDelivered() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(1);
        NearstreamProducer p = new NearstreamProducer(config(client).linger(Duration.ZERO).build());
        CompletableFuture<RecordPosition> a = p.send(bytes("a"));
        AppendCall inFlight = client.nextAppend();
        CompletableFuture<RecordPosition> b = p.send(bytes("b"));
        CompletableFuture<Void> closed =
                CompletableFuture.runAsync(() -> p.close(Duration.ofMillis(100)));
        Thread.sleep(300);
        inFlight.fail(StatusCode.IO_ERROR); // the client gives up on the in-flight request
        closed.get(5, TimeUnit.SECONDS);
        assertThat(a).isCompletedExceptionally();
        assertThat(b).isCompletedExceptionally();
        assertThatThrownBy(() -> p.send(bytes("c"))).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void sendBlocksWhenBufferMemoryIsFull() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(1);
        try (NearstreamProducer p =
                new NearstreamProducer(
                        config(client)
                                .linger(Duration.ZERO)
                                .batchSizeBytes(1024)
                                .bufferMemoryBytes(2048)
                                .maxBlock(Duration.ofMillis(100))
                                .build())) {
            p.send(new byte[1000]);
            AppendCall first = client.nextAppend();
            p.send(new byte[1000]);
            CompletableFuture<RecordPosition> blocked = p.send(new byte[1000]);
            assertThat(blocked).isCompletedExceptionally(); // after max.block
            assertThatThrownBy(blocked::join).hasMessageContaining("buffer.memory");
            first.ok();
            client.nextAppend().ok();
            assertThat(p.send(new byte[1000])).isNotCompletedExceptionally();
            client.nextAppend().ok();
            assertThat(p.send(new byte[5000]))
                    .isCompletedExceptionally(); // larger than buffer.memory
        }
    }

    @Test
    void concurrentSendersWhileTheSenderSealsLingeredChunksLoseAndReorderNothing()
            throws Exception {
        int threads = 4;
        int perThread = 5_000;
        FakeNearstreamClient client = new FakeNearstreamClient(2);
        // Per streamlet, the records in the order the broker got them.
        List<List<String>> stored = List.of(new ArrayList<>(), new ArrayList<>());
        java.util.concurrent.atomic.AtomicBoolean done =
                new java.util.concurrent.atomic.AtomicBoolean();
        Thread broker =
                new Thread(
                        () -> {
                            while (!done.get()) {
                                AppendCall call;
                                try {
                                    call = client.pollAppend(10);
                                } catch (InterruptedException e) {
                                    return;
                                }
                                if (call == null) {
                                    continue;
                                }
                                for (int i = 0; i < call.size(); i++) {
                                    stored.get(call.streamlets[i])
                                            .addAll(ChunkRecords.of(call.chunks.get(i)));
                                }
                                call.ok();
                            }
                        });
        broker.start();
        java.util.concurrent.atomic.AtomicInteger completed =
                new java.util.concurrent.atomic.AtomicInteger();
        SendCallback count =
                (position, error) -> {
                    if (error == null) {
                        completed.incrementAndGet();
                    }
                };
        try (NearstreamProducer p =
                new NearstreamProducer(
                        config(client).linger(Duration.ZERO).batchSizeBytes(512).build())) {
            List<Thread> senders = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                senders.add(
                        new Thread(
                                () -> {
                                    for (int i = 0; i < perThread; i++) {
                                        p.sendTo(i % 2, bytes(thread + ":" + i), count);
                                    }
                                }));
            }
            senders.forEach(Thread::start);
            for (Thread t : senders) {
                t.join();
            }
            p.flush();
        } finally {
            done.set(true);
            broker.join();
        }
        assertThat(completed.get()).isEqualTo(threads * perThread);
        for (int streamlet = 0; streamlet < 2; streamlet++) {
            int[] last = new int[threads];
            java.util.Arrays.fill(last, streamlet - 2);
            for (String r : stored.get(streamlet)) {
                int thread = Integer.parseInt(r.substring(0, r.indexOf(':')));
                int i = Integer.parseInt(r.substring(r.indexOf(':') + 1));
                assertThat(i)
                        .as("record after %s in streamlet %s", last[thread], streamlet)
                        .isEqualTo(last[thread] + 2);
                last[thread] = i;
            }
            assertThat(stored.get(streamlet)).hasSize(threads * perThread / 2);
        }
    }

    @Test
    void keyHashIsKafkasMurmur2() {
        assertThat(NearstreamPartitioner.murmur2(bytes("21"))).isEqualTo(-973932308);
        assertThat(NearstreamPartitioner.murmur2(bytes("foobar"))).isEqualTo(-790332482);
        assertThat(NearstreamPartitioner.murmur2(bytes("a-little-bit-long-string")))
                .isEqualTo(-985981536);
        assertThat(NearstreamPartitioner.murmur2(new byte[] {'a', 'b', 'c'})).isEqualTo(479470107);
        NearstreamPartitioner p = NearstreamPartitioner.keyHash();
        int s = p.streamlet(bytes("user-7"), null, 16);
        for (int i = 0; i < 10; i++) {
            assertThat(p.streamlet(bytes("user-7"), null, 16)).isEqualTo(s);
        }
        NearstreamPartitioner rr = NearstreamPartitioner.roundRobin();
        assertThat(
                        List.of(
                                rr.streamlet(null, null, 3),
                                rr.streamlet(null, null, 3),
                                rr.streamlet(null, null, 3),
                                rr.streamlet(null, null, 3)))
                .containsExactly(0, 1, 2, 0);
    }

    @Test
    void configValidationExplainsWhatIsWrong() {
        FakeNearstreamClient client = new FakeNearstreamClient(1);
        assertThatThrownBy(() -> NearstreamProducerConfig.builder(client, "s").batchSizeBytes(10))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("batchSizeBytes");
        assertThatThrownBy(
                        () ->
                                NearstreamProducerConfig.builder(client, "s")
                                        .batchSizeBytes(8 << 20)
                                        .build())
                .hasMessageContaining("maxRequestBytes");
        assertThat(NearstreamProducerConfig.builder(client, "s").build().producerId())
                .isEqualTo(NearstreamProducerConfig.AUTO_PRODUCER_ID);
        assertThatThrownBy(() -> NearstreamProducerConfig.builder(client, "s").producerId(-5))
                .hasMessageContaining("producerId must be >= 0");
    }
}
