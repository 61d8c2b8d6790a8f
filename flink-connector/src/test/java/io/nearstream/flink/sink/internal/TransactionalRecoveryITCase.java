package io.nearstream.flink.sink.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.BrokerTxnRef;
import io.nearstream.client.StreamConfig;
import io.nearstream.client.TransactionInfo;
import io.nearstream.flink.sink.NearstreamRecordSerializationSchema;
import io.nearstream.flink.sink.testutils.NoTimestampContext;
import io.nearstream.flink.sink.testutils.StreamReader;
import io.nearstream.flink.sink.testutils.TestCommitRequest;
import io.nearstream.flink.sink.testutils.TestCommitRequest.Outcome;
import io.nearstream.flink.sink.testutils.TestWriterContext;
import io.nearstream.testing.NearstreamBrokerExtension;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The exactly-once writer's recovery rules, step by step against the real broker, driving writers
 * and the committer as Flink would around a failure: what a restore keeps and aborts, a rescaled
 * job taking the old ids over from its state, a fresh start cleaning up an earlier run of the same
 * prefix (and not another job's), and the committer's answers. The Flink ITCases show the same end
 * to end, but only where the failure happens to fall.
 */
class TransactionalRecoveryITCase {

    private static final int ONLY = BrokerTxnRef.ONLY_BROKER;

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    private final List<AutoCloseable> toClose = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : toClose) {
            c.close();
        }
    }

    @Test
    void aRestoreKeepsWhatTheCheckpointHoldsAndAbortsWhatCameAfter() throws Exception {
        String stream = createStream("rec.keep");
        ProducerSettings settings = settings(stream, 5_000);
        TransactionalNearstreamWriter<String> zombie =
                writer(settings, "rk", TestWriterContext.fresh(0, 1), List.of());
        write(zombie, "in-checkpoint-1");
        NearstreamCommittable c1 = single(zombie.prepareCommit());
        List<NearstreamWriterState> checkpoint1 = zombie.snapshotState(1);
        assertThat(checkpoint1)
                .containsExactly(new NearstreamWriterState("rk-1-0", Map.of(ONLY, c1.serial())));
        write(zombie, "after-checkpoint-1");
        NearstreamCommittable c2 = single(zombie.prepareCommit()); // its checkpoint never completes
        write(zombie, "open");
        zombie.flush(false);

        // The task failed, its writer lives on as a zombie; Flink restores checkpoint 1.
        TransactionalNearstreamWriter<String> restored =
                writer(settings, "rk", TestWriterContext.restored(0, 1, 1), checkpoint1);
        NearstreamCommitter committer = committer(settings);
        assertThat(commit(committer, c1).outcome()).isEqualTo(Outcome.COMMITTED);
        TestCommitRequest<NearstreamCommittable> lost = commit(committer, c2);
        assertThat(lost.outcome()).isEqualTo(Outcome.FAILED_KNOWN);
        assertThat(lost.failure()).hasMessageContaining("the records it holds are lost");
        assertThat(StreamReader.readAll(BROKER.client(), stream))
                .containsExactly("in-checkpoint-1");

        write(zombie, "zombie");
        assertThatThrownBy(() -> zombie.flush(false))
                .hasMessageContaining("another writer took over transactional id 'rk-1-0'")
                .hasMessageContaining("prefix 'rk'");

        write(restored, "after-restore");
        NearstreamCommittable c3 = single(restored.prepareCommit());
        assertThat(c3.serial()).isGreaterThan(c2.serial());
        assertThat(restored.snapshotState(2))
                .containsExactly(new NearstreamWriterState("rk-1-0", Map.of(ONLY, c3.serial())));
        assertThat(commit(committer, c3).outcome()).isEqualTo(Outcome.COMMITTED);
        assertThat(commit(committer, c1).outcome())
                .as("a repeated commit")
                .isEqualTo(Outcome.COMMITTED);
        assertThat(StreamReader.readAll(BROKER.client(), stream))
                .containsExactlyInAnyOrder("in-checkpoint-1", "after-restore");
        assertThat(restored.prepareCommit()).as("no record since the last prepare").isEmpty();
        assertThat(restored.snapshotState(3))
                .as("still keeps what a committer may hold")
                .containsExactly(new NearstreamWriterState("rk-1-0", Map.of(ONLY, c3.serial())));
    }

    @Test
    void aRescaledJobTakesTheOldIdsOverFromItsState() throws Exception {
        String stream = createStream("rec.rescale");
        ProducerSettings settings = settings(stream, 5_000);
        List<NearstreamCommittable> checkpointed = new ArrayList<>();
        List<NearstreamCommittable> later = new ArrayList<>();
        List<NearstreamWriterState> state = new ArrayList<>();
        List<TransactionalNearstreamWriter<String>> old = new ArrayList<>();
        for (int subtask = 0; subtask < 2; subtask++) {
            TransactionalNearstreamWriter<String> w =
                    writer(settings, "rs", TestWriterContext.fresh(subtask, 2), List.of());
            old.add(w);
            write(w, "kept-" + subtask);
            checkpointed.add(single(w.prepareCommit()));
            state.addAll(w.snapshotState(1));
            write(w, "lost-" + subtask);
            later.add(single(w.prepareCommit()));
        }

        // Restored with parallelism 1: the one writer gets both states.
        TransactionalNearstreamWriter<String> rescaled =
                writer(settings, "rs", TestWriterContext.restored(0, 1, 1), state);
        NearstreamCommitter committer = committer(settings);
        for (NearstreamCommittable c : checkpointed) {
            assertThat(commit(committer, c).outcome()).isEqualTo(Outcome.COMMITTED);
        }
        for (NearstreamCommittable c : later) {
            assertThat(commit(committer, c).outcome()).isEqualTo(Outcome.FAILED_KNOWN);
        }
        // Its next transaction fails at its first request to the broker (its TxnBegin).
        write(old.get(1), "zombie");
        assertThatThrownBy(() -> old.get(1).flush(false))
                .hasMessageContaining("another writer took over transactional id 'rs-2-1'");
        write(rescaled, "new");
        assertThat(commit(committer, single(rescaled.prepareCommit())).outcome())
                .isEqualTo(Outcome.COMMITTED);
        assertThat(StreamReader.readAll(BROKER.client(), stream))
                .containsExactlyInAnyOrder("kept-0", "kept-1", "new");
        assertThat(BROKER.client().txnList(stream, "rs-").join()).isEmpty();
    }

    @Test
    void aFreshStartAbortsWhatAnEarlierRunLeftButNotAnotherJobs() throws Exception {
        String stream = createStream("rec.fresh");
        ProducerSettings settings = settings(stream, 5_000);
        for (int subtask = 0; subtask < 3; subtask++) {
            TransactionalNearstreamWriter<String> w =
                    writer(settings, "rf", TestWriterContext.fresh(subtask, 3), List.of());
            write(w, "earlier-run-" + subtask);
            if (subtask == 1) {
                w.prepareCommit(); // prepared, never committed: its job was given up
                write(w, "earlier-run-open");
            }
            w.flush(false);
        }
        TransactionalNearstreamWriter<String> otherJob =
                writer(settings, "rf-x", TestWriterContext.fresh(0, 1), List.of());
        write(otherJob, "other-job");
        otherJob.flush(false);
        assertThat(BROKER.client().txnList(stream, "rf-").join()).hasSize(5);

        // A new job with the same prefix, started afresh with parallelism 2.
        writer(settings, "rf", TestWriterContext.fresh(0, 2), List.of());
        writer(settings, "rf", TestWriterContext.fresh(1, 2), List.of());

        assertThat(BROKER.client().txnList(stream, "rf-").join())
                .extracting(TransactionInfo::transactionalId)
                .containsExactly("rf-x-1-0");
        NearstreamCommittable other = single(otherJob.prepareCommit());
        assertThat(commit(committer(settings), other).outcome()).isEqualTo(Outcome.COMMITTED);
        assertThat(StreamReader.readAll(BROKER.client(), stream)).containsExactly("other-job");
    }

    @Test
    void theCommitterTreatsAForgottenOutcomeAsCommittedAndRetriesAnUnreachableBroker() {
        String stream = createStream("rec.committer");
        BROKER.client().txnInit(stream, "rc-1-0", 0).join();
        TestCommitRequest<NearstreamCommittable> forgotten =
                commit(
                        committer(settings(stream, 5_000)),
                        new NearstreamCommittable(stream, ONLY, "rc-1-0", 1, 999));
        assertThat(forgotten.outcome()).isEqualTo(Outcome.ALREADY_COMMITTED);

        ProducerSettings nowhere =
                new ProducerSettings("127.0.0.1:1", stream, 64 * 1024, 0, 1_000, 300, 50);
        TestCommitRequest<NearstreamCommittable> unreachable =
                commit(committer(nowhere), new NearstreamCommittable(stream, ONLY, "rc-1-0", 1, 1));
        assertThat(unreachable.outcome()).isEqualTo(Outcome.RETRY_LATER);
    }

    // ---- helpers ------------------------------------------------------------------------------

    private static String createStream(String name) {
        BROKER.createStream(StreamConfig.of(name, 2));
        return name;
    }

    private static ProducerSettings settings(String stream, long requestTimeoutMs) {
        return new ProducerSettings(
                BROKER.address(), stream, 64 * 1024, 0, 10_000, requestTimeoutMs, 20);
    }

    private TransactionalNearstreamWriter<String> writer(
            ProducerSettings settings,
            String prefix,
            WriterInitContext context,
            Collection<NearstreamWriterState> restored) {
        TransactionalNearstreamWriter<String> w =
                new TransactionalNearstreamWriter<>(
                        context,
                        settings,
                        NearstreamRecordSerializationSchema.<String>builder()
                                .setValueSerializationSchema(new SimpleStringSchema())
                                .build(),
                        prefix,
                        restored);
        toClose.add(w);
        return w;
    }

    private NearstreamCommitter committer(ProducerSettings settings) {
        NearstreamCommitter c = new NearstreamCommitter(settings);
        toClose.add(c);
        return c;
    }

    private static void write(TransactionalNearstreamWriter<String> writer, String value) {
        writer.write(value, NoTimestampContext.INSTANCE);
    }

    private static TestCommitRequest<NearstreamCommittable> commit(
            NearstreamCommitter committer, NearstreamCommittable committable) {
        TestCommitRequest<NearstreamCommittable> request = new TestCommitRequest<>(committable);
        committer.commit(List.of(request));
        return request;
    }

    private static NearstreamCommittable single(Collection<NearstreamCommittable> committables) {
        assertThat(committables).hasSize(1);
        return committables.iterator().next();
    }
}
