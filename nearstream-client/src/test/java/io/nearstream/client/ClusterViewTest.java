package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** How {@link ClusterView} takes in ClusterMetadata answers. */
class ClusterViewTest {

    private static final List<BrokerInfo> BROKERS =
            List.of(new BrokerInfo(1, "a:1", "ha"), new BrokerInfo(2, "b:2", "hb"));

    private static ClusterMetadata answer(int by, StreamPlacement... streams) {
        return new ClusterMetadata(by, BROKERS, List.of(streams), 1);
    }

    private static StreamPlacement placement(String name, int version, Integer... owners) {
        return new StreamPlacement(name, version, List.of(owners));
    }

    @Test
    void aLaggingBrokerDoesNotTakeBackANewerPlacement() {
        ClusterView view = new ClusterView();
        view.update(answer(1, placement("s", 5, 1, 2)), List.of("s"), false);
        view.update(answer(2, placement("s", 4, 2, 2)), List.of("s"), false);

        assertThat(view.placement("s")).contains(placement("s", 5, 1, 2));
        assertThat(view.snapshot(List.of()).brokerId()).isEqualTo(2);
    }

    @Test
    void aRefusalTakesTheAnswerWhateverItsVersion() {
        ClusterView view = new ClusterView();
        view.update(answer(1, placement("s", 5, 1, 2)), List.of("s"), false);
        // Deleted and created again: the version started over.
        view.update(answer(1, placement("s", 0, 2, 1)), List.of("s"), true);

        assertThat(view.placement("s")).contains(placement("s", 0, 2, 1));
    }

    @Test
    void versionsCompareUnsigned() {
        ClusterView view = new ClusterView();
        view.update(answer(1, placement("s", -1, 1)), List.of("s"), false);
        view.update(answer(1, placement("s", 7, 2)), List.of("s"), false);

        assertThat(view.placement("s")).contains(placement("s", -1, 1));
    }

    @Test
    void streamsLeftOutOfAnAnswerAreGone() {
        ClusterView view = new ClusterView();
        view.update(answer(1, placement("a", 1, 1), placement("b", 1, 2)), List.of(), false);
        view.update(answer(1), List.of("a"), false);

        assertThat(view.placement("a")).isEmpty();
        assertThat(view.placement("b")).isPresent();

        view.update(answer(1), List.of(), false);
        assertThat(view.placement("b")).isEmpty();
        assertThat(view.brokers()).extracting(BrokerInfo::id).containsExactly(1, 2);
        assertThat(view.broker(2)).contains(BROKERS.get(1));
        assertThat(view.broker(3)).isEmpty();
    }
}
