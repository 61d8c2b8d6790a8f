package io.nearstream.flink.source.testutils;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.function.Supplier;

/**
 * Waits for a condition with a generous deadline instead of sleeping a fixed time; the failure
 * names the condition and shows the state that was seen last.
 */
public final class Await {

    private Await() {}

    /**
     * Polls {@code condition} every 50 ms until it holds; fails after {@code timeout} with {@code
     * what} and {@code state} (evaluated once, at the failure).
     */
    public static void until(
            String what, Duration timeout, Callable<Boolean> condition, Supplier<String> state)
            throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.call()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(
                        "not within " + timeout.toSeconds() + " s: " + what + "\n" + state.get());
            }
            Thread.sleep(50);
        }
    }
}
