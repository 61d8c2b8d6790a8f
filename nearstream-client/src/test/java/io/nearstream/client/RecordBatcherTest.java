package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.FakeNearstreamClient.AppendCall;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@link RecordBatcher}: chunks built on the caller's thread, handed to the producer's sender. */
@Timeout(30)
class RecordBatcherTest {

    /** Every record's outcome, in the order the callbacks ran. */
    private final List<Object> outcomes = new CopyOnWriteArrayList<>();

    private final SendCallback callback =
            (position, error) -> outcomes.add(error != null ? error : position);

    private static NearstreamProducerConfig.Builder config(FakeNearstreamClient client) {
        return NearstreamProducerConfig.builder(client, "s")
                .producerId(7)
                .linger(Duration.ofMillis(1))
                .retryBackoff(Duration.ofMillis(1));
    }

    /** Waits until {@code n} records have their outcome. */
    private void awaitOutcomes(int n) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (outcomes.size() < n) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError(outcomes.size() + " outcomes, not " + n + ", within 5 s");
            }
            Thread.sleep(1);
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Answers append requests until {@code records} records came (chunks handed over one by one may
     * travel in one request or several); returns them.
     */
    private static List<String> answerAll(FakeNearstreamClient client, int records)
            throws InterruptedException {
        List<String> sent = new ArrayList<>();
        while (sent.size() < records) {
            AppendCall call = client.nextAppend();
            for (int i = 0; i < call.size(); i++) {
                sent.addAll(ChunkRecords.of(call.chunks.get(i)));
            }
            call.ok();
        }
        return sent;
    }

    @Test
    void chunksGoOutOnlyWhenFullOrHandedOverInSendOrder() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(2);
        try (NearstreamProducer p =
                new NearstreamProducer(
                        config(client).batchSizeBytes(Chunks.HEADER_BYTES + 3 * 6).build())) {
            RecordBatcher batcher = p.newRecordBatcher();
            batcher.sendTo(0, bytes("a0"), 1_000, callback);
            batcher.sendTo(1, bytes("b0"), 2_000, callback);
            batcher.sendTo(0, bytes("a1"), 3_000, callback);
            // linger.ms is the batcher's caller's to keep: nothing goes out by itself.
            assertThat(client.pollAppend(100)).isNull();
            batcher.sendTo(0, bytes("a2"), 4_000, callback); // streamlet 0's chunk is full
            AppendCall full = client.nextAppend();
            assertThat(full.streamlets).containsExactly(0);
            assertThat(ChunkRecords.of(full.chunks.get(0))).containsExactly("a0", "a1", "a2");
            assertThat(full.header(0).firstTimestampMs()).isEqualTo(1_000);
            assertThat(full.header(0).sequence()).isZero();
            assertThat(batcher.isEmpty()).isFalse();
            full.ok();

            batcher.sendTo(0, bytes("a3"), 5_000, callback);
            batcher.handOverAll();
            assertThat(batcher.isEmpty()).isTrue();
            assertThat(answerAll(client, 2)).containsExactlyInAnyOrder("b0", "a3");
            p.flush();
            assertThat(outcomes).hasSize(5).allMatch(o -> o instanceof RecordPosition);
        }
    }

    @Test
    void aRecordWithoutTimestampStampsItsChunkWithTheTimeItBegan() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(1);
        try (NearstreamProducer p = new NearstreamProducer(config(client).build())) {
            RecordBatcher batcher = p.newRecordBatcher();
            long before = System.currentTimeMillis();
            batcher.sendTo(0, bytes("x"), BatchingProducer.NO_TIMESTAMP, callback);
            batcher.sendTo(0, bytes("y"), 5, callback);
            long after = System.currentTimeMillis();
            CompletableFuture<Void> flushed = CompletableFuture.runAsync(p::flush);
            AppendCall call = client.nextAppend();
            assertThat(call.header(0).firstTimestampMs()).isBetween(before, after);
            call.ok();
            flushed.get(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void flushHandsOverWhatTheBatcherHolds() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(3);
        try (NearstreamProducer p = new NearstreamProducer(config(client).build())) {
            RecordBatcher batcher = p.newRecordBatcher();
            for (int i = 0; i < 6; i++) {
                batcher.send(null, bytes("r" + i), BatchingProducer.NO_TIMESTAMP, callback);
            }
            assertThat(client.pollAppend(100)).isNull();
            CompletableFuture<Void> flushed = CompletableFuture.runAsync(p::flush);
            assertThat(answerAll(client, 6))
                    .containsExactlyInAnyOrder("r0", "r1", "r2", "r3", "r4", "r5");
            flushed.get(5, TimeUnit.SECONDS);
            assertThat(outcomes).hasSize(6).allMatch(o -> o instanceof RecordPosition);
        }
    }

    @Test
    void aChunkGrowsPastBatchSizeWhileItsStreamletsLastChunkIsOnItsWay() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(1);
        int batch = Chunks.HEADER_BYTES + 3 * 6; // three records of 2 bytes
        try (NearstreamProducer p =
                new NearstreamProducer(config(client).batchSizeBytes(batch).build())) {
            RecordBatcher batcher = p.newRecordBatcher();
            for (int i = 0; i < 3; i++) {
                batcher.sendTo(0, bytes("a" + i), 1, callback);
            }
            AppendCall first = client.nextAppend();
            assertThat(ChunkRecords.of(first.chunks.get(0))).hasSize(3);
            for (int i = 3; i < 9; i++) {
                batcher.sendTo(0, bytes("a" + i), 1, callback); // past batch.size: it grows
            }
            assertThat(batcher.isEmpty()).isFalse();
            first.ok();
            // The sender may register for the answer after ok() returned: wait until it took it.
            awaitOutcomes(3);
            batcher.sendTo(0, bytes("a9"), 1, callback); // nothing on its way: handed over
            assertThat(batcher.isEmpty()).isTrue();
            AppendCall second = client.nextAppend();
            assertThat(ChunkRecords.of(second.chunks.get(0)))
                    .containsExactly("a3", "a4", "a5", "a6", "a7", "a8", "a9");

            // Growth stops at 16 x batch.size, whether or not the last chunk was answered.
            int grownRecords = (16 * batch - Chunks.HEADER_BYTES) / 6;
            for (int i = 0; i < grownRecords; i++) {
                batcher.sendTo(0, bytes("b" + (i % 10)), 1, callback);
            }
            assertThat(batcher.isEmpty()).isTrue();
            assertThat(client.pollAppend(50)).as("one chunk per streamlet in flight").isNull();
            second.ok();
            AppendCall third = client.nextAppend();
            assertThat(third.header(0).recordCount()).isEqualTo(grownRecords);
            third.ok();
            p.flush();
            assertThat(outcomes)
                    .hasSize(10 + grownRecords)
                    .allMatch(o -> o instanceof RecordPosition);
        }
    }

    @Test
    void aChunkWaitsForBufferMemoryUpToMaxBlockThenItsRecordsFail() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(1);
        try (NearstreamProducer p =
                new NearstreamProducer(
                        config(client)
                                .batchSizeBytes(1024)
                                .bufferMemoryBytes(1600)
                                .maxBlock(Duration.ofMillis(100))
                                .build())) {
            RecordBatcher batcher = p.newRecordBatcher();
            batcher.sendTo(0, new byte[1100], 1, callback); // full: handed over at once
            AppendCall first = client.nextAppend();
            batcher.sendTo(0, new byte[600], 1, callback);
            batcher.handOverAll(); // 1104 + 604 bytes > buffer.memory: waits 100 ms, then fails
            assertThat(outcomes).hasSize(1).first().isInstanceOf(NearstreamClientException.class);
            assertThat(outcomes.get(0).toString()).contains("buffer.memory");
            first.ok();
            batcher.sendTo(0, new byte[600], 1, callback);
            batcher.handOverAll();
            client.nextAppend().ok();
            p.flush();
            assertThat(outcomes).hasSize(3);
            assertThat(outcomes.subList(1, 3)).allMatch(o -> o instanceof RecordPosition);
            batcher.sendTo(0, new byte[5000], 1, callback);
            assertThat(outcomes.get(3).toString()).contains("exceeds buffer.memory");
        }
    }

    @Test
    void closedProducerRefusesRecordsAndHandOvers() throws Exception {
        FakeNearstreamClient client = new FakeNearstreamClient(1);
        NearstreamProducer p = new NearstreamProducer(config(client).build());
        RecordBatcher batcher = p.newRecordBatcher();
        p.close();
        assertThatThrownBy(() -> batcher.sendTo(0, bytes("late"), 1, callback))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
        assertThat(outcomes).isEmpty();
    }
}
