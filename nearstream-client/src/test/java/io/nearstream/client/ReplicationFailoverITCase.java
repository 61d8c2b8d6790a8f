package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.testing.NearstreamClusterExtension;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A streamlet's leader killed (SIGKILL) under a running producer and a running reader, over three
 * real brokers and a real ZooKeeper (docs/protocol.md, "ReplicaAppend (14)", "ClusterMetadata
 * (11)"): until ZooKeeper ends the dead broker's session and the controller makes an in-sync
 * follower leader, the client sees refused connections, then possibly BROKER_UNAVAILABLE and
 * NOT_OWNER; {@link NearstreamProducer} and {@link NearstreamPullConsumer} must ride through all of
 * it on their own, as Kafka's clients do. Every acknowledged record must then be read exactly once,
 * each streamlet in the order sent, at the position its acknowledgement named, and every chunk must
 * have kept its sequence number through its retries.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ReplicationFailoverITCase {

    /** A short ZooKeeper session, so the dead leader is replaced within seconds. */
    private static final int SESSION_MS = 2000;

    private static final int STREAMLETS = 2;

    /** 16 KiB segments, 4 per group: the failover happens with segments and groups behind. */
    private static final int SEGMENT_BYTES = 16 * 1024;

    /** Records acknowledged before a leader is killed. */
    private static final int KILL_AFTER = 2_000;

    /** The most records one test sends. */
    private static final int MAX_RECORDS = 200_000;

    @RegisterExtension
    static final NearstreamClusterExtension CLUSTER =
            new NearstreamClusterExtension(
                    List.of("host-a", "host-a", "host-a"),
                    List.of("--zookeeper-session-ms", Integer.toString(SESSION_MS)));

    /** 20 000 records; the leader of streamlet 0 dies after 2 000 are acknowledged. */
    @Test
    @Order(1)
    void producerAndReaderGoOnThroughTheLossOfAStreamletsLeader() throws Throwable {
        withBrokerLogs(
                () -> {
                    String stream = "r.failover";
                    try (NearstreamClient admin = NearstreamClient.connect(CLUSTER.bootstrap())) {
                        createReplicated(admin, stream);
                        StreamPlacement before = placement(admin, stream);
                        ReplicaSet set = before.replicaSet(0);
                        int dead = before.owner(0);
                        assertThat(set.replicas()).hasSize(2).startsWith(dead);
                        assertThat(set.isr()).containsExactlyInAnyOrderElementsOf(set.replicas());
                        assertThat(set.leaderEpoch()).isZero();
                        int heir = set.replicas().get(1);

                        Reader live = new Reader(stream);
                        live.start();
                        ProducerRun producer = new ProducerRun(stream, 20_000);
                        producer.start();
                        producer.awaitAcked(KILL_AFTER);
                        int readBeforeKill = live.count.get();
                        long killNanos = kill(dead);

                        producer.join();
                        StreamPlacement after = awaitNewLeader(admin, stream, dead);
                        assertThat(after.owner(0)).isEqualTo(heir);
                        assertThat(after.replicaSet(0).leaderEpoch()).isEqualTo(1);
                        assertThat(after.owners()).doesNotContain(dead);
                        report("one failover", producer, List.of(killNanos), readBeforeKill);
                        assertThat(readBeforeKill)
                                .as("the live reader was reading when the leader died")
                                .isPositive();

                        checkEverything(producer, live, stream);
                        CLUSTER.restart(dead - 1); // for the next test
                    }
                });
    }

    /**
     * The leader dies; the dead broker comes back, copies the streamlet again and rejoins the
     * in-sync set (ReplicaJoin); then the new leader dies too, and the first leads again at epoch
     * 2. One producer and one reader run through both.
     */
    @Test
    @Order(2)
    void producerAndReaderGoOnThroughTwoFailoversAndARejoin() throws Throwable {
        withBrokerLogs(
                () -> {
                    String stream = "r.twice";
                    try (NearstreamClient admin = NearstreamClient.connect(CLUSTER.bootstrap())) {
                        awaitBrokers(admin, 3);
                        createReplicated(admin, stream);
                        StreamPlacement before = placement(admin, stream);
                        int first = before.owner(0);
                        int second = before.replicaSet(0).replicas().get(1);

                        Reader live = new Reader(stream);
                        live.start();
                        ProducerRun producer = new ProducerRun(stream, MAX_RECORDS);
                        producer.start();
                        producer.awaitAcked(KILL_AFTER);
                        List<Long> kills = new ArrayList<>();
                        kills.add(kill(first));
                        assertThat(awaitNewLeader(admin, stream, first).owner(0)).isEqualTo(second);

                        // The producer has moved to the new leader before the dead broker comes
                        // back: a restarted former leader answers appends sent to it on a stale
                        // view with STREAM_NOT_FOUND for a moment (a broker bug, see
                        // aRestartedFormerLeaderRefusesWithNotOwner), which would fail them.
                        producer.awaitAcked(producer.acked.get() + 200);
                        CLUSTER.restart(first - 1);
                        awaitIsr(admin, stream, List.of(second, first));
                        int acked = producer.acked.get();
                        producer.awaitAcked(acked + KILL_AFTER);
                        int readBeforeKill = live.count.get();
                        kills.add(kill(second));
                        StreamPlacement after = awaitNewLeader(admin, stream, second);
                        assertThat(after.owner(0)).isEqualTo(first);
                        assertThat(after.replicaSet(0).leaderEpoch()).isEqualTo(2);

                        acked = producer.acked.get();
                        producer.awaitAcked(acked + KILL_AFTER);
                        producer.stop();
                        producer.join();
                        report("two failovers", producer, kills, readBeforeKill);
                        checkEverything(producer, live, stream);
                        CLUSTER.restart(second - 1);
                    }
                });
    }

    /**
     * A former leader restarted after its follower took over is a follower: until it has caught up
     * (and after), an Append or Fetch of the streamlet it led, sent to it by a client whose view is
     * stale, must get NOT_OWNER naming the new leader (or another retriable status), never a fatal
     * one such as STREAM_NOT_FOUND, and never be taken.
     */
    @Test
    @Order(3)
    void aRestartedFormerLeaderRefusesWithNotOwner() throws Throwable {
        withBrokerLogs(
                () -> {
                    String stream = "r.probe";
                    try (NearstreamClient admin = NearstreamClient.connect(CLUSTER.bootstrap())) {
                        awaitBrokers(admin, 3);
                        createReplicated(admin, stream);
                        int old = placement(admin, stream).owner(0);
                        // The new leader is busy while the old one comes back (its copy takes
                        // a while), as in a real failover.
                        ProducerRun producer = new ProducerRun(stream, MAX_RECORDS);
                        producer.start();
                        producer.awaitAcked(KILL_AFTER);
                        kill(old);
                        int heir = awaitNewLeader(admin, stream, old).owner(0);
                        producer.awaitAcked(producer.acked.get() + 200);
                        // Probed from before the restart on, so that requests reach it as soon
                        // as it accepts connections (refused before: retriable, fine).
                        List<String> wrong = Collections.synchronizedList(new ArrayList<>());
                        List<String> seen = Collections.synchronizedList(new ArrayList<>());
                        AtomicBoolean probing = new AtomicBoolean(true);
                        long restarting = System.nanoTime();
                        Thread prober =
                                new Thread(
                                        () -> probe(stream, old, restarting, probing, seen, wrong),
                                        "failover-prober");
                        prober.start();
                        CLUSTER.restart(old - 1);
                        Thread.sleep(3_000);
                        probing.set(false);
                        prober.join(30_000);
                        producer.stop();
                        producer.join();
                        assertThat(producer.failures).as("records that failed").isEmpty();
                        System.err.println(
                                "ReplicationFailoverITCase, broker "
                                        + old
                                        + " restarted after broker "
                                        + heir
                                        + " took over streamlet 0 answered: "
                                        + String.join(" | ", seen));
                        assertThat(wrong)
                                .as(
                                        "answers of the restarted former leader, broker %d, to"
                                                + " requests for streamlet 0 (led by broker %d)",
                                        old, heir)
                                .isEmpty();
                    }
                });
    }

    /**
     * Sends an Append (producer id 424242) and a Fetch of streamlet 0 straight to broker {@code
     * id}, again and again while {@code probing}; notes each change of answer in {@code seen} and
     * every answer that is OK or not retriable in {@code wrong}.
     */
    private static void probe(
            String stream,
            int id,
            long since,
            AtomicBoolean probing,
            List<String> seen,
            List<String> wrong) {
        NearstreamClient direct =
                NettyNearstreamClient.open(
                        CLUSTER.broker(id - 1).address(), NearstreamClientOptions.DEFAULTS);
        try {
            byte[] chunk =
                    new ChunkBuilder().add(value(-1)).build(424242, 0, System.currentTimeMillis());
            String last = "";
            while (probing.get()) {
                long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - since);
                String append;
                String fetch;
                StatusCode appendStatus;
                StatusCode fetchStatus;
                try {
                    AppendResult r =
                            direct.append(stream, new int[] {0}, List.of(chunk))
                                    .get(10, TimeUnit.SECONDS)
                                    .get(0);
                    appendStatus = r.status();
                    append = r.status() + " " + r.message();
                } catch (Exception e) {
                    NearstreamClientException c =
                            StreamletRouter.asClientException(
                                    e.getCause() != null ? e.getCause() : e);
                    appendStatus = c.status();
                    append = c.getMessage();
                }
                try (FetchResponse f =
                        direct.fetch(stream, 0, List.of(new FetchEntry(0, Position.EARLIEST, 1024)))
                                .get(10, TimeUnit.SECONDS)) {
                    StreamletFetch r = f.results().get(0);
                    fetchStatus = r.status();
                    fetch = r.status() + " " + r.message();
                } catch (Exception e) {
                    NearstreamClientException c =
                            StreamletRouter.asClientException(
                                    e.getCause() != null ? e.getCause() : e);
                    fetchStatus = c.status();
                    fetch = c.getMessage();
                }
                String answer = "Append " + append + "; Fetch " + fetch;
                String line = "+" + ms + " ms: " + answer;
                if (!answer.equals(last)) {
                    seen.add(line);
                    last = answer;
                }
                if (appendStatus == StatusCode.OK
                        || !appendStatus.isRetriable()
                        || fetchStatus == StatusCode.OK
                        || !fetchStatus.isRetriable()) {
                    wrong.add(line);
                }
                Thread.sleep(1);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            direct.close();
        }
    }

    // ---- the parts of a test --------------------------------------------------------------

    /** A test body that may throw anything. */
    @FunctionalInterface
    private interface Body {
        void run() throws Exception;
    }

    /** Runs {@code body}; when it fails, prints every broker's log, for whoever has to find out. */
    private static void withBrokerLogs(Body body) throws Throwable {
        try {
            body.run();
        } catch (Throwable t) {
            for (int i = 0; i < CLUSTER.size(); i++) {
                System.err.println(
                        "==== log of broker "
                                + CLUSTER.brokerId(i)
                                + " ====\n"
                                + CLUSTER.broker(i).log());
            }
            throw t;
        }
    }

    /** Durability sync, replication 2, small segments and groups. */
    private static void createReplicated(NearstreamClient admin, String stream) throws Exception {
        admin.createStream(
                        new StreamConfig(
                                stream,
                                STREAMLETS,
                                SEGMENT_BYTES,
                                4,
                                0,
                                Durability.SYNC,
                                -1,
                                -1,
                                2))
                .get(30, TimeUnit.SECONDS);
    }

    /** Kills broker {@code id} with SIGKILL (and waits for its exit); when that was. */
    private static long kill(int id) {
        CLUSTER.kill(id - 1);
        return System.nanoTime();
    }

    private static StreamPlacement placement(NearstreamClient admin, String stream)
            throws Exception {
        return admin.clusterMetadata(stream)
                .get(10, TimeUnit.SECONDS)
                .placement(stream)
                .orElseThrow();
    }

    private static StreamPlacement awaitNewLeader(NearstreamClient admin, String stream, int old)
            throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            StreamPlacement p = placement(admin, stream);
            if (p.owner(0) != old) {
                return p;
            }
            assertThat(System.nanoTime()).as("a new leader of streamlet 0").isLessThan(deadline);
            Thread.sleep(50);
        }
    }

    private static void awaitIsr(NearstreamClient admin, String stream, List<Integer> isr)
            throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            List<Integer> now = placement(admin, stream).replicaSet(0).isr();
            if (now.size() == isr.size() && now.containsAll(isr)) {
                return;
            }
            assertThat(System.nanoTime())
                    .as("the in-sync set of streamlet 0 is %s, now %s", isr, now)
                    .isLessThan(deadline);
            Thread.sleep(100);
        }
    }

    private static void awaitBrokers(NearstreamClient admin, int count) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (admin.clusterMetadata().get(10, TimeUnit.SECONDS).brokers().size() < count) {
            assertThat(System.nanoTime()).as("%d brokers registered", count).isLessThan(deadline);
            Thread.sleep(100);
        }
    }

    /**
     * The producer finished without an error and with every record acknowledged, every chunk kept
     * its sequence, the live reader got every record once and in order, and so does a new reader
     * from the earliest position, at the positions the producer was told.
     */
    private static void checkEverything(ProducerRun producer, Reader live, String stream)
            throws Exception {
        int total = producer.sent;
        assertThat(producer.errors).as("the producer threw").isEmpty();
        assertThat(producer.failures).as("records that failed").isEmpty();
        assertThat(producer.acked.get()).isEqualTo(total);
        checkAttempts(producer.attempts, total);

        live.awaitAll(total, TimeUnit.SECONDS.toNanos(60));
        assertThat(live.errors).as("the live reader's errors").isEmpty();
        for (int s = 0; s < STREAMLETS; s++) {
            assertThat(live.read.get(s)).as("streamlet %d, live", s).isEqualTo(sentTo(s, total));
        }

        Reader fresh = new Reader(stream);
        fresh.start();
        fresh.awaitAll(total, TimeUnit.SECONDS.toNanos(60));
        assertThat(fresh.errors).as("the fresh reader's errors").isEmpty();
        for (int s = 0; s < STREAMLETS; s++) {
            assertThat(fresh.read.get(s)).as("streamlet %d, fresh", s).isEqualTo(sentTo(s, total));
        }
        int withoutPosition = 0;
        synchronized (fresh.records) {
            for (NearstreamRecord r : fresh.records) {
                int n = number(r);
                RecordPosition p = producer.positions.get(n);
                if (p.chunk().isEarliest()) {
                    withoutPosition++; // a duplicate whose position the broker forgot
                    continue;
                }
                assertThat(new RecordPosition(r.streamlet(), r.chunk(), r.index()))
                        .as("record %d", n)
                        .isEqualTo(p);
            }
        }
        assertThat(withoutPosition).isLessThan(total / 10);
    }

    /** Prints how long streamlet 0 stood still for the producer, and what its Appends got. */
    private static void report(
            String what, ProducerRun producer, List<Long> kills, int readBeforeLastKill) {
        List<Long> acks = new ArrayList<>();
        for (int i = 0; i < producer.sent; i += STREAMLETS) {
            acks.add(producer.ackedAt.get(i));
        }
        Collections.sort(acks);
        StringBuilder out = new StringBuilder("ReplicationFailoverITCase, " + what + ": ");
        for (long kill : kills) {
            long first = acks.stream().filter(t -> t - kill > 0).findFirst().orElse(kill);
            out.append("streamlet 0's first acknowledgement came ")
                    .append(TimeUnit.NANOSECONDS.toMillis(first - kill))
                    .append(" ms after the kill; its Appends from then: ")
                    .append(timeline(producer.attempts, kill))
                    .append(". ");
        }
        long longestGap = 0;
        for (int i = 1; i < acks.size(); i++) {
            longestGap = Math.max(longestGap, acks.get(i) - acks.get(i - 1));
        }
        out.append("Longest pause between acknowledgements of streamlet 0: ")
                .append(TimeUnit.NANOSECONDS.toMillis(longestGap))
                .append(" ms; ")
                .append(producer.sent)
                .append(" records in ")
                .append(TimeUnit.NANOSECONDS.toMillis(producer.tookNanos))
                .append(" ms; the live reader had read ")
                .append(readBeforeLastKill)
                .append(" at the last kill.");
        System.err.println(out);
    }

    // ---- records ----------------------------------------------------------------------------

    private static byte[] value(int i) {
        return Integer.toString(i).getBytes(StandardCharsets.US_ASCII);
    }

    private static int number(NearstreamRecord r) {
        return Integer.parseInt(new String(r.value(), StandardCharsets.US_ASCII));
    }

    /** Record {@code i} goes to streamlet {@code i % STREAMLETS}: streamlet s's, in order. */
    private static List<Integer> sentTo(int streamlet, int total) {
        List<Integer> out = new ArrayList<>();
        for (int i = streamlet; i < total; i += STREAMLETS) {
            out.add(i);
        }
        return out;
    }

    // ---- the producer -----------------------------------------------------------------------

    /**
     * A {@link NearstreamProducer} with the normal API on its own thread: record {@code i} is
     * {@code "i"}, to streamlet {@code i % STREAMLETS}, in small chunks (a few dozen records),
     * paced (50 records every 20 ms) so that it is still writing while a leader is gone.
     */
    private static final class ProducerRun {
        final String stream;
        final int limit;
        final AtomicInteger acked = new AtomicInteger();
        final ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
        final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        final AtomicReferenceArray<RecordPosition> positions;
        final AtomicLongArray ackedAt;
        final List<Attempt> attempts = Collections.synchronizedList(new ArrayList<>());
        private final AtomicBoolean stop = new AtomicBoolean();
        private final Thread thread = new Thread(this::loop, "failover-producer");

        /** Records sent; final once {@link #join()} returned. */
        volatile int sent;

        volatile long tookNanos;

        ProducerRun(String stream, int limit) {
            this.stream = stream;
            this.limit = limit;
            this.positions = new AtomicReferenceArray<>(limit);
            this.ackedAt = new AtomicLongArray(limit);
        }

        void start() {
            thread.start();
        }

        void stop() {
            stop.set(true);
        }

        private void loop() {
            long start = System.nanoTime();
            // The producer's client, watched: every Append attempt and its answer.
            NearstreamClient client = observed(NearstreamClient.connect(CLUSTER.bootstrap()));
            NearstreamProducerConfig config =
                    NearstreamProducerConfig.builder(client, stream)
                            .batchSizeBytes(256)
                            .linger(Duration.ofMillis(1))
                            .build();
            try (NearstreamProducer producer = new NearstreamProducer(config)) {
                int n = 0;
                for (; n < limit && !stop.get(); n++) {
                    int i = n;
                    producer.sendTo(
                            i % STREAMLETS,
                            value(i),
                            (pos, err) -> {
                                if (err != null) {
                                    failures.add(i + ": " + err);
                                    return;
                                }
                                positions.set(i, pos);
                                ackedAt.set(i, System.nanoTime());
                                acked.incrementAndGet();
                            });
                    if (i % 50 == 49) {
                        Thread.sleep(20);
                    }
                }
                sent = n;
                producer.flush();
            } catch (Throwable t) {
                errors.add(t);
            } finally {
                client.close();
                tookNanos = System.nanoTime() - start;
            }
        }

        void awaitAcked(int count) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (acked.get() < count) {
                assertThat(failures).as("records that failed").isEmpty();
                assertThat(errors).as("the producer threw").isEmpty();
                assertThat(thread.isAlive()).as("the producer runs").isTrue();
                assertThat(System.nanoTime())
                        .as("%d records acknowledged", count)
                        .isLessThan(deadline);
                Thread.sleep(5);
            }
        }

        void join() throws InterruptedException {
            thread.join(TimeUnit.MINUTES.toMillis(3));
            assertThat(thread.isAlive()).as("the producer finished").isFalse();
        }

        /**
         * {@code target}, noting every chunk of every Append it is asked to send (streamlet,
         * sequence and first record as sent) with its answer.
         */
        private NearstreamClient observed(NearstreamClient target) {
            return (NearstreamClient)
                    Proxy.newProxyInstance(
                            NearstreamClient.class.getClassLoader(),
                            new Class<?>[] {NearstreamClient.class},
                            (proxy, method, args) -> {
                                List<Attempt> asked = new ArrayList<>();
                                if (method.getName().equals("append")
                                        && args.length == 3
                                        && args[1] instanceof int[] streamlets) {
                                    @SuppressWarnings("unchecked")
                                    List<byte[]> chunks = (List<byte[]>) args[2];
                                    long now = System.nanoTime();
                                    for (int i = 0; i < streamlets.length; i++) {
                                        byte[] chunk = chunks.get(i);
                                        List<String> records = ChunkRecords.of(chunk);
                                        asked.add(
                                                new Attempt(
                                                        streamlets[i],
                                                        Chunks.parseHeader(chunk).sequence(),
                                                        Integer.parseInt(records.get(0)),
                                                        records.size(),
                                                        now,
                                                        null,
                                                        null,
                                                        false));
                                    }
                                }
                                Object result;
                                try {
                                    result = method.invoke(target, args);
                                } catch (InvocationTargetException e) {
                                    throw e.getCause();
                                }
                                if (!asked.isEmpty()) {
                                    @SuppressWarnings("unchecked")
                                    CompletableFuture<List<AppendResult>> answer =
                                            (CompletableFuture<List<AppendResult>>) result;
                                    answer.whenComplete(
                                            (results, err) -> note(asked, results, err));
                                }
                                return result;
                            });
        }

        private void note(List<Attempt> sent, List<AppendResult> results, Throwable err) {
            for (int i = 0; i < sent.size(); i++) {
                Attempt a = sent.get(i);
                StatusCode status;
                String message;
                boolean duplicate = false;
                if (err != null) {
                    NearstreamClientException e = StreamletRouter.asClientException(err);
                    status = e.status();
                    message = e.getMessage();
                } else {
                    status = results.get(i).status();
                    message = results.get(i).message();
                    duplicate = results.get(i).duplicate();
                }
                attempts.add(
                        new Attempt(
                                a.streamlet(),
                                a.sequence(),
                                a.first(),
                                a.records(),
                                a.sentNanos(),
                                status,
                                message,
                                duplicate));
            }
        }
    }

    /** One Append attempt of one chunk, as sent, and its answer. */
    private record Attempt(
            int streamlet,
            long sequence,
            int first,
            int records,
            long sentNanos,
            StatusCode status,
            String message,
            boolean duplicate) {}

    private static List<Attempt> sorted(List<Attempt> all) {
        List<Attempt> attempts;
        synchronized (all) {
            attempts = new ArrayList<>(all);
        }
        attempts.sort(Comparator.comparingLong(Attempt::sentNanos));
        return attempts;
    }

    /**
     * Every chunk kept its sequence through its retries (a sequence always carries the same
     * records), and each streamlet's chunks were sent in order, one sequence after the other, with
     * none left out.
     */
    private static void checkAttempts(List<Attempt> all, int total) {
        List<Attempt> attempts = sorted(all);
        for (int s = 0; s < STREAMLETS; s++) {
            int streamlet = s;
            List<Attempt> mine = attempts.stream().filter(a -> a.streamlet() == streamlet).toList();
            Map<Long, Attempt> bySequence = new TreeMap<>();
            long lastSequence = Long.MIN_VALUE;
            for (Attempt a : mine) {
                Attempt earlier = bySequence.putIfAbsent(a.sequence(), a);
                if (earlier != null) {
                    assertThat(List.of(a.first(), a.records()))
                            .as("streamlet %d: the chunk of sequence %d", s, a.sequence())
                            .isEqualTo(List.of(earlier.first(), earlier.records()));
                }
                // One chunk of a streamlet in flight: a retry never comes after a later chunk.
                assertThat(a.sequence())
                        .as("streamlet %d: sequences in the order sent", s)
                        .isGreaterThanOrEqualTo(lastSequence);
                lastSequence = a.sequence();
            }
            long expectedSequence = -1;
            int expectedFirst = s;
            for (Attempt a : bySequence.values()) {
                if (expectedSequence >= 0) {
                    assertThat(a.sequence())
                            .as("streamlet %d: no sequence left out", s)
                            .isEqualTo(expectedSequence);
                }
                assertThat(a.first())
                        .as(
                                "streamlet %d: sequence %d starts where the last ended",
                                s, a.sequence())
                        .isEqualTo(expectedFirst);
                expectedSequence = a.sequence() + 1;
                expectedFirst = a.first() + a.records() * STREAMLETS;
            }
            assertThat(expectedFirst)
                    .as("streamlet %d: its records end", s)
                    .isGreaterThanOrEqualTo(total);
        }
    }

    /**
     * Streamlet 0's Append attempts sent after {@code fromNanos} until the first acknowledged one,
     * runs of equal answers folded: "+1 ms IO_ERROR (…) x22; +2247 ms OK".
     */
    private static String timeline(List<Attempt> all, long fromNanos) {
        StringBuilder out = new StringBuilder();
        String last = null;
        int run = 0;
        for (Attempt a : sorted(all)) {
            if (a.streamlet() != 0 || a.sentNanos() - fromNanos < 0) {
                continue;
            }
            String kind = a.status() + (a.duplicate() ? " duplicate" : "");
            if (kind.equals(last)) {
                run++;
                continue;
            }
            if (last != null) {
                out.append(" x").append(run).append("; ");
            }
            last = kind;
            run = 1;
            out.append("+")
                    .append(TimeUnit.NANOSECONDS.toMillis(a.sentNanos() - fromNanos))
                    .append(" ms ")
                    .append(kind);
            if (a.status() == StatusCode.OK) {
                return out.toString();
            }
            out.append(" (").append(a.message()).append(")");
        }
        return last == null ? "none" : out.append(" x").append(run).toString();
    }

    // ---- the reader -------------------------------------------------------------------------

    /** A pull consumer reading every streamlet from the earliest position, on its own thread. */
    private static final class Reader {
        final List<List<Integer>> read = new ArrayList<>();
        final List<NearstreamRecord> records = Collections.synchronizedList(new ArrayList<>());
        final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        final AtomicInteger count = new AtomicInteger();
        private final String stream;
        private final AtomicBoolean stop = new AtomicBoolean();
        private final Thread thread = new Thread(this::loop, "failover-reader");

        Reader(String stream) {
            this.stream = stream;
            for (int s = 0; s < STREAMLETS; s++) {
                read.add(Collections.synchronizedList(new ArrayList<>()));
            }
        }

        void start() {
            thread.start();
        }

        private void loop() {
            try (NearstreamPullConsumer consumer =
                    NearstreamPullConsumer.builder(CLUSTER.bootstrap(), stream)
                            .maxWait(Duration.ofMillis(200))
                            .build()) {
                for (int s = 0; s < STREAMLETS; s++) {
                    consumer.assign(s, StartingPosition.earliest());
                }
                while (!stop.get()) {
                    for (NearstreamRecord r : consumer.poll(Duration.ofMillis(200))) {
                        read.get(r.streamlet()).add(number(r));
                        records.add(r);
                        count.incrementAndGet();
                    }
                }
            } catch (Throwable t) {
                errors.add(t);
            }
        }

        /**
         * Waits until {@code total} records were read (or the time is up), then a little longer, so
         * that a record read twice would show, and stops.
         */
        void awaitAll(int total, long nanos) throws InterruptedException {
            long deadline = System.nanoTime() + nanos;
            while (count.get() < total && errors.isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            Thread.sleep(500);
            stop.set(true);
            thread.join(10_000);
        }
    }
}
