package io.nearstream.client;

import static io.nearstream.client.NearstreamClientAdminITCase.assertStatus;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.testing.NearstreamBrokerExtension;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The Netty client against the real broker: data path, pipelining, long poll, reconnects. */
class NettyNearstreamClientITCase {

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    private static byte[] chunk(long producerId, long sequence, long ts, String... records) {
        ChunkBuilder b = new ChunkBuilder();
        for (String r : records) {
            b.add(r.getBytes(StandardCharsets.UTF_8));
        }
        return b.build(producerId, sequence, ts);
    }

    private static List<String> readAll(FetchResponse response, int streamlet) {
        List<String> out = new ArrayList<>();
        for (StreamletFetch r : response.results()) {
            if (r.streamlet() != streamlet) {
                continue;
            }
            assertThat(r.ok()).as(r.message()).isTrue();
            for (ChunkBlock block : r.blocks()) {
                assertThat(block.data().isReadOnly()).isTrue();
                assertThat(block.data().order()).isEqualTo(ByteOrder.LITTLE_ENDIAN);
                ChunkCursor c = new ChunkCursor(block);
                while (c.nextChunk()) {
                    while (c.nextRecord()) {
                        out.add(new String(c.copyRecord(), StandardCharsets.UTF_8));
                    }
                }
            }
        }
        return out;
    }

    @Test
    void appendThenFetchAcrossSegments() {
        NearstreamClient client = BROKER.client();
        // 4 KiB segments, 2 per group: 60 chunks of ~300 bytes cross many segments and groups.
        client.createStream(
                        new StreamConfig("data.segments", 2, 4096, 2, 1, Durability.NONE, -1, -1))
                .join();
        List<Position> appended = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            AppendResult r =
                    client.append(
                                    "data.segments",
                                    new int[] {1},
                                    List.of(chunk(0, 0, i, "r" + i + "-" + "x".repeat(240))))
                            .join()
                            .get(0);
            assertThat(r.ok()).as(r.message()).isTrue();
            assertThat(r.duplicate()).isFalse();
            appended.add(r.position());
        }
        assertThat(appended).isSorted().doesNotHaveDuplicates();
        assertThat(appended.get(59).group()).isGreaterThan(appended.get(0).group());

        // Follow `next` with a small budget: one or two chunks per fetch.
        Position next = Position.EARLIEST;
        List<String> records = new ArrayList<>();
        List<Position> chunkPositions = new ArrayList<>();
        for (int round = 0; round < 200 && records.size() < 60; round++) {
            try (FetchResponse f =
                    client.fetch("data.segments", 0, List.of(new FetchEntry(1, next, 600)))
                            .join()) {
                StreamletFetch r = f.results().get(0);
                assertThat(r.ok()).as(r.message()).isTrue();
                for (ChunkBlock block : r.blocks()) {
                    ChunkCursor c = new ChunkCursor(block);
                    while (c.nextChunk()) {
                        chunkPositions.add(c.position());
                        while (c.nextRecord()) {
                            records.add(new String(c.copyRecord(), StandardCharsets.UTF_8));
                        }
                    }
                }
                next = r.next();
            }
        }
        assertThat(records).hasSize(60);
        for (int i = 0; i < 60; i++) {
            assertThat(records.get(i)).startsWith("r" + i + "-");
        }
        assertThat(chunkPositions).isEqualTo(appended);

        // The other streamlet is empty; the tail of streamlet 1 is past the last chunk.
        List<StreamletMetadata> md = client.metadata("data.segments").join();
        assertThat(md.get(0).head()).isEqualTo(Position.EARLIEST);
        assertThat(md.get(1).head()).isEqualTo(appended.get(0));
        assertThat(md.get(1).tail()).isGreaterThan(appended.get(59));
    }

    @Test
    void perEntryErrorsAndIdempotentAppendSurviveRestart() throws Exception {
        NearstreamClient client = BROKER.client();
        client.createStream(StreamConfig.of("data.idem", 2).withDurability(Durability.SYNC)).join();
        long pid = 0x1234_5678L;
        byte[] c0 = chunk(pid, 0, 1, "a");
        byte[] c1 = chunk(pid, 1, 2, "b");
        byte[] bad = c0.clone();
        bad[bad.length - 1] ^= 1; // payload CRC no longer matches

        List<AppendResult> rs =
                client.append("data.idem", new int[] {0, 1, 7}, List.of(c0, bad, c0)).join();
        assertThat(rs)
                .extracting(AppendResult::status)
                .containsExactly(
                        StatusCode.OK, StatusCode.CORRUPT_CHUNK, StatusCode.STREAMLET_NOT_FOUND);
        Position p0 = rs.get(0).position();

        AppendResult dup = client.append("data.idem", new int[] {0}, List.of(c0)).join().get(0);
        assertThat(dup.ok()).isTrue();
        assertThat(dup.duplicate()).isTrue();
        assertThat(dup.position()).isEqualTo(p0);

        BROKER.restart();
        // The broker rebuilt the producer's sequence from the stored chunk headers.
        AppendResult again = client.append("data.idem", new int[] {0}, List.of(c0)).join().get(0);
        assertThat(again.duplicate()).isTrue();
        AppendResult gap =
                client.append("data.idem", new int[] {0}, List.of(chunk(pid, 5, 3, "gap")))
                        .join()
                        .get(0);
        assertThat(gap.status()).isEqualTo(StatusCode.OUT_OF_ORDER_SEQUENCE);
        assertThat(client.append("data.idem", new int[] {0}, List.of(c1)).join().get(0).ok())
                .isTrue();

        try (FetchResponse f =
                client.fetch("data.idem", 0, List.of(new FetchEntry(0, Position.EARLIEST, 1 << 20)))
                        .join()) {
            assertThat(readAll(f, 0)).containsExactly("a", "b");
        }
        assertThat(BROKER.client().stats().join().get("nearstream_append_duplicates_total"))
                .isGreaterThanOrEqualTo(1L);
    }

    @Test
    void pipelinesHundredsOfRequestsFromSeveralThreads() throws Exception {
        NearstreamClient client = BROKER.client();
        client.createStream(StreamConfig.of("data.pipeline", 4)).join();
        int threads = 4;
        int perThread = 150;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch start = new CountDownLatch(1);
        List<CompletableFuture<List<AppendResult>>> appends = new ArrayList<>();
        List<CompletableFuture<?>> others = new ArrayList<>();
        List<java.util.concurrent.Future<?>> tasks = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int thread = t;
            tasks.add(
                    pool.submit(
                            () -> {
                                start.await();
                                List<CompletableFuture<List<AppendResult>>> mine =
                                        new ArrayList<>();
                                List<CompletableFuture<?>> mineOther = new ArrayList<>();
                                for (int i = 0; i < perThread; i++) {
                                    mine.add(
                                            client.append(
                                                    "data.pipeline",
                                                    new int[] {thread},
                                                    List.of(chunk(0, 0, i, thread + ":" + i))));
                                    if (i % 10 == 0) {
                                        mineOther.add(client.metadata("data.pipeline", thread));
                                        mineOther.add(client.describeStream("data.pipeline"));
                                    }
                                }
                                synchronized (appends) {
                                    appends.addAll(mine);
                                    others.addAll(mineOther);
                                }
                                return null;
                            }));
        }
        start.countDown();
        for (var task : tasks) {
            task.get(30, TimeUnit.SECONDS);
        }
        pool.shutdown();
        CompletableFuture.allOf(appends.toArray(new CompletableFuture[0]))
                .get(30, TimeUnit.SECONDS);
        CompletableFuture.allOf(others.toArray(new CompletableFuture[0])).get(30, TimeUnit.SECONDS);
        Set<String> positions = new HashSet<>();
        for (var f : appends) {
            AppendResult r = f.join().get(0);
            assertThat(r.ok()).isTrue();
            positions.add(r.streamlet() + "@" + r.position());
        }
        assertThat(positions).hasSize(threads * perThread);

        // Each streamlet holds its thread's records in that thread's order.
        for (int t = 0; t < threads; t++) {
            try (FetchResponse f =
                    client.fetch(
                                    "data.pipeline",
                                    0,
                                    List.of(new FetchEntry(t, Position.EARLIEST, 1 << 20)))
                            .join()) {
                List<String> records = readAll(f, t);
                assertThat(records).hasSize(perThread);
                for (int i = 0; i < perThread; i++) {
                    assertThat(records.get(i)).isEqualTo(t + ":" + i);
                }
            }
        }
    }

    @Test
    void longPollFetchWaitsForAnAppend() throws Exception {
        NearstreamClient client = BROKER.client();
        client.createStream(StreamConfig.of("data.longpoll", 2)).join();
        List<FetchEntry> entries =
                List.of(
                        new FetchEntry(0, Position.EARLIEST, 1 << 20),
                        new FetchEntry(1, Position.EARLIEST, 1 << 20));

        long t0 = System.nanoTime();
        try (FetchResponse empty = client.fetch("data.longpoll", 300, entries).join()) {
            assertThat(empty.results()).allSatisfy(r -> assertThat(r.blocks()).isEmpty());
        }
        long waitedMs = (System.nanoTime() - t0) / 1_000_000;
        assertThat(waitedMs).isGreaterThanOrEqualTo(250);

        t0 = System.nanoTime();
        CompletableFuture<FetchResponse> parked = client.fetch("data.longpoll", 10_000, entries);
        // Later requests on the same connection are answered while the fetch is parked.
        assertThat(client.describeStream("data.longpoll").get(5, TimeUnit.SECONDS).streamlets())
                .isEqualTo(2);
        Thread.sleep(100);
        assertThat(parked).isNotDone();
        client.append("data.longpoll", new int[] {1}, List.of(chunk(0, 0, 5, "wake up"))).join();
        try (FetchResponse r = parked.get(5, TimeUnit.SECONDS)) {
            assertThat((System.nanoTime() - t0) / 1_000_000).isLessThan(5_000);
            assertThat(readAll(r, 1)).containsExactly("wake up");
            r.close(); // idempotent
        }
    }

    @Test
    void reconnectsAfterBrokerRestart() throws Exception {
        NettyNearstreamClient client = NettyNearstreamClient.connect(BROKER.address());
        try {
            client.createStream(
                            StreamConfig.of("data.reconnect", 1).withDurability(Durability.ASYNC))
                    .join();
            long epoch = client.handshake("it").join();
            CompletableFuture<FetchResponse> inFlight =
                    client.fetch(
                            "data.reconnect",
                            20_000,
                            List.of(new FetchEntry(0, Position.EARLIEST, 1024)));
            Thread.sleep(100);
            BROKER.restart();
            assertThatThrownBy(() -> inFlight.get(10, TimeUnit.SECONDS))
                    .cause()
                    .isInstanceOf(NearstreamClientException.class)
                    .satisfies(
                            e ->
                                    assertThat(((NearstreamClientException) e).status())
                                            .isEqualTo(StatusCode.IO_ERROR));
            // The next request opens a new connection to the restarted broker.
            assertThat(client.handshake("it").get(10, TimeUnit.SECONDS)).isNotEqualTo(epoch);
            assertThat(client.isConnected()).isTrue();
            assertThat(client.describeStream("data.reconnect").join().durability())
                    .isEqualTo(Durability.ASYNC);

            BROKER.stop();
            assertStatus(() -> client.listStreams().join(), StatusCode.IO_ERROR);
            BROKER.restart();
            assertThat(client.listStreams().get(10, TimeUnit.SECONDS)).contains("data.reconnect");
        } finally {
            client.close();
            client.close(); // idempotent
        }
        assertStatus(() -> client.listStreams().join(), StatusCode.IO_ERROR);
    }

    @Test
    void requestTimeoutFailsTheRequestOnly() throws Exception {
        NearstreamClientOptions options =
                NearstreamClientOptions.builder().requestTimeout(Duration.ofMillis(300)).build();
        try (NettyNearstreamClient client =
                NettyNearstreamClient.connect(BROKER.address(), options)) {
            client.createStream(StreamConfig.of("data.timeout", 1)).join();
            // A long poll waits maxWait + the request timeout, so this one is not cut short.
            try (FetchResponse r =
                    client.fetch(
                                    "data.timeout",
                                    500,
                                    List.of(new FetchEntry(0, Position.EARLIEST, 1024)))
                            .get(5, TimeUnit.SECONDS)) {
                assertThat(r.results().get(0).ok()).isTrue();
            }
        }
    }

    @Test
    void lookupTimestamps() {
        NearstreamClient client = BROKER.client();
        client.createStream(StreamConfig.of("data.time", 2)).join();
        List<Position> at = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            at.add(
                    client.append(
                                    "data.time",
                                    new int[] {0},
                                    List.of(chunk(0, 0, 1_000L * (i + 1), "t" + i)))
                            .join()
                            .get(0)
                            .position());
        }
        Map<Integer, Long> query = new LinkedHashMap<>();
        query.put(0, 2_500L);
        query.put(1, 0L);
        List<TimestampLookup> found = client.lookupTimestamps("data.time", query).join();
        assertThat(found).extracting(TimestampLookup::streamlet).containsExactly(0, 1);
        assertThat(found.get(0).status()).isEqualTo(StatusCode.OK);
        assertThat(found.get(0).position()).isEqualTo(at.get(2));
        assertThat(found.get(1).position()).isEqualTo(Position.EARLIEST); // empty streamlet

        Position tail = client.metadata("data.time", 0).join().get(0).tail();
        assertThat(
                        client.lookupTimestamps("data.time", Map.of(0, 99_999L))
                                .join()
                                .get(0)
                                .position())
                .isEqualTo(tail);
        assertThat(
                        client.lookupTimestamps("data.time", Map.of(0, Long.MIN_VALUE))
                                .join()
                                .get(0)
                                .position())
                .isEqualTo(at.get(0));
        assertThat(client.lookupTimestamps("data.time", Map.of(9, 0L)).join().get(0).status())
                .isEqualTo(StatusCode.STREAMLET_NOT_FOUND);
        assertThatThrownBy(() -> client.lookupTimestamps("data.none", Map.of(0, 0L)).join())
                .isInstanceOf(CompletionException.class)
                .hasMessageContaining("STREAM_NOT_FOUND");
    }
}
