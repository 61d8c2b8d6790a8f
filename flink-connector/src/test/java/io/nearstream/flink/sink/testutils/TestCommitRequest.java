package io.nearstream.flink.sink.testutils;

import org.apache.flink.api.connector.sink2.Committer.CommitRequest;

/** A commit request as Flink's committer operator makes it, remembering how it was answered. */
public final class TestCommitRequest<T> implements CommitRequest<T> {

    /** How a committer answered a request. */
    public enum Outcome {
        COMMITTED,
        ALREADY_COMMITTED,
        FAILED_KNOWN,
        FAILED_UNKNOWN,
        RETRY_LATER
    }

    private final T committable;
    private Outcome outcome = Outcome.COMMITTED; // what saying nothing means
    private Throwable failure;

    public TestCommitRequest(T committable) {
        this.committable = committable;
    }

    public Outcome outcome() {
        return outcome;
    }

    public Throwable failure() {
        return failure;
    }

    @Override
    public T getCommittable() {
        return committable;
    }

    @Override
    public int getNumberOfRetries() {
        return 0;
    }

    @Override
    public void signalFailedWithKnownReason(Throwable t) {
        outcome = Outcome.FAILED_KNOWN;
        failure = t;
    }

    @Override
    public void signalFailedWithUnknownReason(Throwable t) {
        outcome = Outcome.FAILED_UNKNOWN;
        failure = t;
    }

    @Override
    public void retryLater() {
        outcome = Outcome.RETRY_LATER;
    }

    @Override
    public void updateAndRetryLater(T committable) {
        outcome = Outcome.RETRY_LATER;
    }

    @Override
    public void signalAlreadyCommitted() {
        outcome = Outcome.ALREADY_COMMITTED;
    }
}
