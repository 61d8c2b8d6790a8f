package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The choice of broker per streamlet, and the fall-back to the leader, on a clock of its own. */
class FollowerReadsTest {

    private static final int LEADER = 2;
    private static final int FOLLOWER = 1;

    private final AtomicLong now = new AtomicLong(1_000);
    private final FollowerReads reads = new FollowerReads(Duration.ofNanos(100), now::get);

    @Test
    void aStreamletWithoutAChoiceIsReadFromItsLeader() {
        assertThat(reads.broker(0, LEADER)).isEqualTo(LEADER);
        assertThat(reads.notServedBy(0, LEADER)).isFalse();
        assertThat(reads.fellBack(0)).isFalse();
    }

    @Test
    void theChosenFollowerServesUntilItDoesNot() {
        reads.readFrom(0, FOLLOWER);
        assertThat(reads.broker(0, LEADER)).isEqualTo(FOLLOWER);
        assertThat(reads.broker(1, LEADER)).as("another streamlet").isEqualTo(LEADER);

        assertThat(reads.notServedBy(0, FOLLOWER)).isTrue();
        assertThat(reads.fellBack(0)).isTrue();
        assertThat(reads.broker(0, LEADER)).isEqualTo(LEADER);
        // The leader is whichever broker leads now: a new one after a failover.
        assertThat(reads.broker(0, 3)).isEqualTo(3);
    }

    @Test
    void theFollowerIsAskedAgainAfterThePause() {
        reads.readFrom(0, FOLLOWER);
        reads.notServedBy(0, FOLLOWER);
        now.addAndGet(99);
        assertThat(reads.broker(0, LEADER)).isEqualTo(LEADER);
        now.addAndGet(1);
        assertThat(reads.broker(0, LEADER)).isEqualTo(FOLLOWER);
        assertThat(reads.fellBack(0)).isFalse();
        // It fails again: the streamlet falls back again, for a whole pause.
        reads.notServedBy(0, FOLLOWER);
        now.addAndGet(99);
        assertThat(reads.broker(0, LEADER)).isEqualTo(LEADER);
    }

    @Test
    void aRefusalByAnotherBrokerLeavesTheChoiceAlone() {
        reads.readFrom(0, FOLLOWER);
        // The leader moved away: the cluster client's refresh handles that, not a fall-back.
        assertThat(reads.notServedBy(0, LEADER)).isFalse();
        assertThat(reads.notServedBy(1, FOLLOWER)).as("a streamlet read from its leader").isFalse();
        assertThat(reads.broker(0, LEADER)).isEqualTo(FOLLOWER);
    }

    @Test
    void aNewChoiceEndsAFallBack() {
        reads.readFrom(0, FOLLOWER);
        reads.notServedBy(0, FOLLOWER);
        reads.readFrom(0, FOLLOWER);
        assertThat(reads.fellBack(0)).as("the same choice again").isTrue();
        reads.readFrom(0, 3);
        assertThat(reads.broker(0, LEADER)).isEqualTo(3);
        reads.readFromLeader(0);
        assertThat(reads.broker(0, LEADER)).isEqualTo(LEADER);
        assertThat(reads.fellBack(0)).isFalse();
    }

    @Test
    void choosingTheLeaderIsAnOrdinaryRead() {
        reads.readFrom(0, LEADER);
        assertThat(reads.broker(0, LEADER)).isEqualTo(LEADER);
    }

    @Test
    void aNegativePauseIsRefused() {
        assertThatThrownBy(() -> new FollowerReads(Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
