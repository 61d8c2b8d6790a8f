package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.testing.NearstreamClusterExtension;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Three real brokers and a real ZooKeeper on 127.0.0.1 (docs/cluster.md): streams spread over the
 * brokers, the client routing per streamlet, a broker asked for another's streamlet naming the
 * owner, a killed broker named in the errors while the others keep flowing, and ZooKeeper lost
 * mid-run.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class NearstreamClusterITCase {

    /** A short ZooKeeper session, so a killed broker's registration goes within seconds. */
    private static final int SESSION_MS = 2000;

    @RegisterExtension
    static final NearstreamClusterExtension CLUSTER =
            new NearstreamClusterExtension(
                    List.of("host-a", "host-a", "host-a"),
                    List.of("--zookeeper-session-ms", Integer.toString(SESSION_MS)));

    private static byte[] record(long n) {
        return ByteBuffer.allocate(16).putLong(n).putLong(~n).array();
    }

    private static long number(byte[] value) {
        ByteBuffer b = ByteBuffer.wrap(value);
        long n = b.getLong();
        assertThat(b.getLong()).isEqualTo(~n);
        return n;
    }

    private static byte[] chunk(String record) {
        return new ChunkBuilder()
                .add(record.getBytes(StandardCharsets.UTF_8))
                .build(0, 0, System.currentTimeMillis());
    }

    private static NearstreamClient cluster() {
        return NearstreamClient.connect(CLUSTER.bootstrap());
    }

    /** Appends one record to each of {@code streamlets} streamlets through {@code client}. */
    private static List<AppendResult> appendToEach(
            NearstreamClient client, String stream, int streamlets) throws Exception {
        int[] all = new int[streamlets];
        List<byte[]> chunks = new ArrayList<>();
        for (int s = 0; s < streamlets; s++) {
            all[s] = s;
            chunks.add(chunk("to " + s));
        }
        return client.append(stream, all, chunks).get(30, TimeUnit.SECONDS);
    }

    private static void await(String what, Supplier<Boolean> condition) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.get()) {
            assertThat(System.nanoTime()).as(what).isLessThan(deadline);
            Thread.sleep(100);
        }
    }

    @Test
    @Order(1)
    void aStreamSpreadOverThreeBrokersGivesBackEveryRecordExactlyOnceAndInOrder() throws Exception {
        int streamlets = 6;
        int total = 60_000;
        try (NearstreamClient client = cluster()) {
            client.createStream(StreamConfig.of("c.spread", streamlets)).get(10, TimeUnit.SECONDS);
            ClusterMetadata view = client.clusterMetadata("c.spread").get(10, TimeUnit.SECONDS);
            assertThat(view.brokers()).extracting(BrokerInfo::id).containsExactly(1, 2, 3);
            List<Integer> owners = view.placement("c.spread").orElseThrow().owners();
            assertThat(owners).hasSize(streamlets);
            // Round-robin: every broker stores two of the six streamlets.
            assertThat(
                            owners.stream()
                                    .collect(Collectors.groupingBy(o -> o, Collectors.counting())))
                    .containsOnly(Map.entry(1, 2L), Map.entry(2, 2L), Map.entry(3, 2L));

            NearstreamProducerConfig config =
                    NearstreamProducerConfig.builder(CLUSTER.bootstrap(), "c.spread")
                            .linger(Duration.ofMillis(2))
                            .build();
            List<CompletableFuture<RecordPosition>> futures = new ArrayList<>(total);
            try (NearstreamProducer producer = new NearstreamProducer(config)) {
                for (int i = 0; i < total; i++) {
                    futures.add(producer.send(record(i)));
                }
                producer.flush();
            }
            assertThat(futures).allMatch(f -> f.isDone() && !f.isCompletedExceptionally());

            // Each broker holds data on its own streamlets only.
            for (int i = 0; i < 3; i++) {
                int id = CLUSTER.brokerId(i);
                int[] mine =
                        java.util.stream.IntStream.range(0, streamlets)
                                .filter(s -> owners.get(s) == id)
                                .toArray();
                List<StreamletMetadata> held =
                        CLUSTER.broker(i).client().metadata("c.spread").get(10, TimeUnit.SECONDS);
                assertThat(held)
                        .extracting(StreamletMetadata::streamlet)
                        .as("streamlets broker %d answers for", id)
                        .containsExactly(Arrays.stream(mine).boxed().toArray(Integer[]::new));
                assertThat(held).allMatch(m -> !m.groups().isEmpty());
            }

            long[] lastSeen = new long[streamlets];
            Arrays.fill(lastSeen, -1);
            int count = 0;
            try (NearstreamPullConsumer consumer =
                    NearstreamPullConsumer.builder(CLUSTER.bootstrap(), "c.spread")
                            .maxWait(Duration.ofMillis(100))
                            .build()) {
                for (int s = 0; s < streamlets; s++) {
                    consumer.assign(s, StartingPosition.earliest());
                }
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (count < total && System.nanoTime() < deadline) {
                    for (NearstreamRecord r : consumer.poll(Duration.ofMillis(500))) {
                        long n = number(r.value());
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
            }
        }
    }

    @Test
    @Order(2)
    void aBrokerAskedForAnotherBrokersStreamletNamesItsOwner() throws Exception {
        try (NearstreamClient client = cluster()) {
            client.createStream(StreamConfig.of("c.owner", 3)).get(10, TimeUnit.SECONDS);
            List<Integer> owners =
                    client.clusterMetadata("c.owner")
                            .get(10, TimeUnit.SECONDS)
                            .placement("c.owner")
                            .orElseThrow()
                            .owners();
            // Straight to broker 1, bypassing the routing: only its own streamlet is taken.
            NearstreamClient one = CLUSTER.broker(0).client();
            List<AppendResult> results = appendToEach(one, "c.owner", 3);
            for (int s = 0; s < 3; s++) {
                int owner = owners.get(s);
                if (owner == 1) {
                    assertThat(results.get(s).ok()).as("streamlet %d on broker 1", s).isTrue();
                } else {
                    assertThat(results.get(s).status()).isEqualTo(StatusCode.NOT_OWNER);
                    assertThat(results.get(s).message())
                            .contains(
                                    "is stored by broker "
                                            + owner
                                            + " at "
                                            + CLUSTER.broker(owner - 1).address());
                }
            }
            // Every broker describes the stream, whichever it was created through.
            for (int i = 0; i < 3; i++) {
                assertThat(CLUSTER.broker(i).client().listStreams().get(10, TimeUnit.SECONDS))
                        .contains("c.owner");
            }
        }
    }

    @Test
    @Order(3)
    void aKilledBrokersStreamletsFailNamingItWhileTheOthersFlow() throws Exception {
        try (NearstreamClient client = cluster()) {
            client.createStream(StreamConfig.of("c.kill", 6)).get(10, TimeUnit.SECONDS);
            List<Integer> owners =
                    client.clusterMetadata("c.kill")
                            .get(10, TimeUnit.SECONDS)
                            .placement("c.kill")
                            .orElseThrow()
                            .owners();
            assertThat(appendToEach(client, "c.kill", 6)).allMatch(AppendResult::ok);

            CLUSTER.kill(1); // broker 2, SIGKILL: its registration lives until its session expires
            try {
                // At once: its connection is refused. Once ZooKeeper has dropped it and the
                // client has refreshed its view: BROKER_UNAVAILABLE, without a connection attempt.
                // Every answer names broker 2, and the other brokers' streamlets take every append.
                boolean unavailableSeen = false;
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (!unavailableSeen) {
                    assertThat(System.nanoTime())
                            .as("BROKER_UNAVAILABLE seen")
                            .isLessThan(deadline);
                    List<AppendResult> results = appendToEach(client, "c.kill", 6);
                    for (int s = 0; s < 6; s++) {
                        AppendResult r = results.get(s);
                        if (owners.get(s) == 2) {
                            assertThat(r.ok()).as("streamlet %d of the killed broker", s).isFalse();
                            assertThat(r.message()).contains("broker 2");
                            unavailableSeen |= r.status() == StatusCode.BROKER_UNAVAILABLE;
                        } else {
                            assertThat(r.ok()).as("streamlet %d: %s", s, r.message()).isTrue();
                        }
                    }
                    Thread.sleep(200);
                }
            } finally {
                CLUSTER.restart(1);
            }
            // Back: its streamlets take appends again.
            await(
                    "broker 2 serves again",
                    () -> {
                        try {
                            return appendToEach(client, "c.kill", 6).stream()
                                    .allMatch(AppendResult::ok);
                        } catch (Exception e) {
                            return false;
                        }
                    });
        }
    }

    @Test
    @Order(4)
    void brokersKeepServingWithoutZooKeeperAndRefusePlacementChanges() throws Exception {
        try (NearstreamClient client = cluster()) {
            client.createStream(StreamConfig.of("c.nozk", 3)).get(10, TimeUnit.SECONDS);
            // Every owner has taken a record, so it knows the stream without asking ZooKeeper.
            assertThat(appendToEach(client, "c.nozk", 3)).allMatch(AppendResult::ok);
            CLUSTER.zookeeper().kill();
            try {
                assertThat(appendToEach(client, "c.nozk", 3)).allMatch(AppendResult::ok);
                CompletableFuture<Void> create = client.createStream(StreamConfig.of("c.late", 2));
                assertThat(create)
                        .failsWithin(Duration.ofSeconds(30))
                        .withThrowableThat()
                        .havingRootCause()
                        .isInstanceOf(NearstreamClientException.class)
                        .withMessageContaining("CLUSTER_UNAVAILABLE");
            } finally {
                CLUSTER.zookeeper().restart();
            }
            await(
                    "a create once ZooKeeper is back",
                    () ->
                            client.createStream(StreamConfig.of("c.late", 2))
                                    .handle(
                                            (ok, e) ->
                                                    // A try answered too late may have made it.
                                                    e == null
                                                            || String.valueOf(e)
                                                                    .contains("STREAM_EXISTS"))
                                    .join());
            assertThat(appendToEach(client, "c.late", 2)).allMatch(AppendResult::ok);
        }
    }

    /**
     * A broker stopped (SIGSTOP) for longer than its ZooKeeper session: ZooKeeper expires the
     * session and drops its registration, the other brokers stop listing it; resumed, it opens a
     * new session and registers again, and its streamlets take appends again.
     */
    @Test
    @Order(5)
    void aBrokerPausedPastItsSessionRegistersAgain() throws Exception {
        try (NearstreamClient client = cluster()) {
            client.createStream(StreamConfig.of("c.pause", 3)).get(10, TimeUnit.SECONDS);
            long pid = CLUSTER.broker(1).pid();
            signal("STOP", pid);
            try {
                await(
                        "broker 2 dropped from the cluster view",
                        () ->
                                CLUSTER.broker(0)
                                        .client()
                                        .clusterMetadata()
                                        .join()
                                        .broker(2)
                                        .isEmpty());
            } finally {
                signal("CONT", pid);
            }
            await(
                    "broker 2 registered again",
                    () ->
                            CLUSTER.broker(1).log().contains("registering broker 2 again")
                                    && CLUSTER.broker(0)
                                            .client()
                                            .clusterMetadata()
                                            .join()
                                            .broker(2)
                                            .isPresent());
            await(
                    "every streamlet takes appends again",
                    () -> {
                        try {
                            return appendToEach(client, "c.pause", 3).stream()
                                    .allMatch(AppendResult::ok);
                        } catch (Exception e) {
                            return false;
                        }
                    });
        }
    }

    /**
     * A stream deleted through one broker goes from every broker: each sees its node's deletion and
     * removes its local copy (a request for it then answers STREAM_NOT_FOUND).
     */
    @Test
    @Order(6)
    void aStreamDeletedThroughOneBrokerGoesFromEveryBroker() throws Exception {
        try (NearstreamClient client = cluster()) {
            client.createStream(StreamConfig.of("c.delete", 3)).get(10, TimeUnit.SECONDS);
            assertThat(appendToEach(client, "c.delete", 3)).allMatch(AppendResult::ok);
            CLUSTER.broker(0).client().deleteStream("c.delete").get(10, TimeUnit.SECONDS);
            for (int i = 1; i < 3; i++) {
                NearstreamClient one = CLUSTER.broker(i).client();
                await(
                        "broker " + (i + 1) + " removed its copy",
                        () ->
                                one.metadata("c.delete")
                                        .handle(
                                                (ok, e) ->
                                                        e != null
                                                                && String.valueOf(e)
                                                                        .contains(
                                                                                "STREAM_NOT_FOUND"))
                                        .join());
            }
        }
    }

    /**
     * Creates go through any broker to the controller; killed (SIGKILL), the controller keeps its
     * ZooKeeper node until its session expires, and the client's create, refused as retriable
     * meanwhile, is made once another broker is elected, placed over the brokers that remain.
     */
    @Test
    @Order(7)
    void aCreateOutlivesTheLossOfTheController() throws Exception {
        try (NearstreamClient client = cluster()) {
            ClusterMetadata before = client.clusterMetadata().get(10, TimeUnit.SECONDS);
            int controller = before.controllerId();
            assertThat(before.broker(controller)).as("controller %d", controller).isPresent();
            int index = controller - 1; // broker ids are 1, 2, 3
            assertThat(CLUSTER.brokerId(index)).isEqualTo(controller);
            CLUSTER.kill(index);
            try {
                client.createStream(StreamConfig.of("c.failover", 4)).get(30, TimeUnit.SECONDS);
                ClusterMetadata after =
                        client.clusterMetadata("c.failover").get(10, TimeUnit.SECONDS);
                assertThat(after.controllerId())
                        .isNotEqualTo(controller)
                        .isNotEqualTo(ClusterMetadata.NO_CONTROLLER);
                assertThat(after.placement("c.failover").orElseThrow().owners())
                        .hasSize(4)
                        .doesNotContain(controller);
                assertThat(appendToEach(client, "c.failover", 4)).allMatch(AppendResult::ok);
            } finally {
                CLUSTER.restart(index);
            }
        }
    }

    private static void signal(String name, long pid) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(pid)).start();
        assertThat(kill.waitFor(10, TimeUnit.SECONDS)).isTrue();
        assertThat(kill.exitValue()).as("kill -%s %d", name, pid).isZero();
    }
}
