package io.nearstream.client;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.function.LongSupplier;

/**
 * Which broker a reader over a cluster fetches each streamlet from (docs/cluster.md, "Follower
 * reads"): a follower it prefers, say the in-sync replica on its own host, asked with the
 * replica-read frame flag, or the streamlet's leader. Give it to {@link
 * NearstreamClient#fetch(String, int, java.util.List, FollowerReads)} with every fetch of the
 * reader.
 *
 * <p><b>Falling back.</b> A follower that cannot serve a streamlet answers {@code NOT_OWNER} (it
 * left the in-sync set, its copy in memory is being rebuilt, the brokers run without {@code
 * --follower-reads}), and one that cannot be reached fails the request. Either way the streamlet
 * <i>falls back</i> to its leader: the same fetch sends its entry there at once, and its fetches go
 * to the leader until {@code retryAfter} has passed; then the follower is asked again (and the
 * streamlet falls back again if it still cannot serve it). A fixed pause, rather than a wait for
 * some sign that the follower is back, keeps this right whatever went wrong, at the cost of one
 * refused entry per pause while the follower stays unable.
 *
 * <p>Nothing is lost or read twice by moving: a streamlet's positions are its leader's on every
 * copy, and a follower shows exactly what the leader's readers saw at some earlier instant, never
 * more, so a fetch continues on either broker at the position the other one gave.
 *
 * <p>Thread-safe: a reader's thread sets the choices while a client's I/O threads report the
 * brokers that did not serve.
 */
public final class FollowerReads {

    /** How long a streamlet reads from its leader after its follower did not serve it. */
    public static final Duration DEFAULT_RETRY_AFTER = Duration.ofSeconds(5);

    private final long retryAfterNanos;
    private final LongSupplier nanoClock;

    // Guarded by this.
    private final Map<Integer, Integer> chosen = new HashMap<>();
    private final Map<Integer, Long> onLeaderUntil = new HashMap<>();

    /** Followers asked again {@link #DEFAULT_RETRY_AFTER} after they did not serve. */
    public FollowerReads() {
        this(DEFAULT_RETRY_AFTER);
    }

    /** Followers asked again {@code retryAfter} after they did not serve. */
    public FollowerReads(Duration retryAfter) {
        this(retryAfter, System::nanoTime);
    }

    FollowerReads(Duration retryAfter, LongSupplier nanoClock) {
        if (retryAfter.isNegative()) {
            throw new IllegalArgumentException(
                    "retryAfter must not be negative, got " + retryAfter);
        }
        this.retryAfterNanos = retryAfter.toNanos();
        this.nanoClock = Objects.requireNonNull(nanoClock);
    }

    /**
     * Reads {@code streamlet} from broker {@code broker} (an id, a {@code u32} held in an int): a
     * replica read when it is not the streamlet's leader, an ordinary fetch when it is.
     */
    public synchronized void readFrom(int streamlet, int broker) {
        Integer before = chosen.put(streamlet, broker);
        if (before == null || before != broker) {
            onLeaderUntil.remove(streamlet);
        }
    }

    /** Reads {@code streamlet} from its leader, whichever broker that is (the default). */
    public synchronized void readFromLeader(int streamlet) {
        chosen.remove(streamlet);
        onLeaderUntil.remove(streamlet);
    }

    /** The broker chosen for {@code streamlet}; empty when it reads from its leader by choice. */
    public synchronized OptionalInt chosen(int streamlet) {
        Integer broker = chosen.get(streamlet);
        return broker == null ? OptionalInt.empty() : OptionalInt.of(broker);
    }

    /**
     * Whether {@code streamlet} reads from its leader for now because its chosen follower did not
     * serve it lately.
     */
    public synchronized boolean fellBack(int streamlet) {
        return onLeader(streamlet);
    }

    /**
     * The broker to send {@code streamlet}'s entry to, {@code leader} leading it: the chosen
     * broker, unless the streamlet fell back lately; else the leader.
     */
    synchronized int broker(int streamlet, int leader) {
        Integer broker = chosen.get(streamlet);
        if (broker == null || onLeader(streamlet)) {
            return leader;
        }
        return broker;
    }

    /**
     * Broker {@code broker} did not serve {@code streamlet}: it refused it or could not be reached.
     * When that is the streamlet's chosen broker, the streamlet falls back to its leader for {@code
     * retryAfter}; a refusal by any other broker (the leader moved) is the cluster client's to
     * handle. Returns whether the streamlet fell back.
     */
    synchronized boolean notServedBy(int streamlet, int broker) {
        Integer mine = chosen.get(streamlet);
        if (mine == null || mine != broker) {
            return false;
        }
        onLeaderUntil.put(streamlet, nanoClock.getAsLong() + retryAfterNanos);
        return true;
    }

    private boolean onLeader(int streamlet) {
        Long until = onLeaderUntil.get(streamlet);
        if (until == null) {
            return false;
        }
        if (nanoClock.getAsLong() - until >= 0) {
            onLeaderUntil.remove(streamlet);
            return false;
        }
        return true;
    }

    @Override
    public synchronized String toString() {
        return "FollowerReads{chosen=" + chosen + ", onLeaderUntil=" + onLeaderUntil.keySet() + "}";
    }
}
