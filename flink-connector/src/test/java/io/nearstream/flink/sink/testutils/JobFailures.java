package io.nearstream.flink.sink.testutils;

import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/** Runs a job that should fail and tells why it did. */
public final class JobFailures {

    private JobFailures() {}

    /** Runs the job; returns the failure, or fails the test when the job succeeds. */
    public static Throwable failureOf(StreamExecutionEnvironment env) {
        try {
            env.execute();
        } catch (Exception e) {
            return e;
        }
        throw new AssertionError("the job did not fail");
    }

    /** The messages of a failure and all its causes, one per line: what a user would read. */
    public static String messages(Throwable t) {
        StringBuilder all = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            all.append(c.getClass().getSimpleName())
                    .append(": ")
                    .append(c.getMessage())
                    .append('\n');
        }
        return all.toString();
    }
}
