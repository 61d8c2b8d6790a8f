package io.nearstream.flink.source.reader;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;

/**
 * A split reader's {@code wakeUp()}: any thread may call {@link #wakeUp()}; a wait of the fetcher
 * thread armed with {@link #arm()} (or a {@link #sleep}) ends at once, and a wake-up that comes
 * while the fetcher is not waiting is remembered for its next wait.
 */
@Internal
public final class WakeUpSignal {
    private final AtomicBoolean requested = new AtomicBoolean();
    @Nullable private volatile CompletableFuture<Void> waker;

    /** Any thread. */
    public void wakeUp() {
        requested.set(true);
        CompletableFuture<Void> w = waker;
        if (w != null) {
            w.complete(null);
        }
    }

    /** Consumes a pending wake-up; true when there was one. Fetcher thread. */
    public boolean consume() {
        return requested.getAndSet(false);
    }

    /**
     * Starts a wait: the returned future completes on {@link #wakeUp()}, at once when one is
     * pending. End the wait with {@link #disarm()}. Fetcher thread.
     */
    public CompletableFuture<Void> arm() {
        CompletableFuture<Void> w = new CompletableFuture<>();
        waker = w;
        if (consume()) {
            w.complete(null);
        }
        return w;
    }

    public void disarm() {
        waker = null;
    }

    /** Sleeps up to {@code ms} unless woken up; the wake-up is consumed. Fetcher thread. */
    public void sleep(long ms) {
        CompletableFuture<Void> w = arm();
        try {
            w.get(ms, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (TimeoutException | ExecutionException ignored) {
            // slept long enough
        } finally {
            disarm();
            requested.set(false);
        }
    }
}
