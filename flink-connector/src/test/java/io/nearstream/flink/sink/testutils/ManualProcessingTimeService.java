package io.nearstream.flink.sink.testutils;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.operators.ProcessingTimeService;

/**
 * A processing-time service whose clock the test sets and whose timers run on the test's thread
 * when it calls {@link #advanceTo}, as a task's mailbox runs them on the task thread.
 */
public final class ManualProcessingTimeService implements ProcessingTimeService {

    private long now;
    private final List<Timer> timers = new ArrayList<>();

    @Override
    public long getCurrentProcessingTime() {
        return now;
    }

    @Override
    public ScheduledFuture<?> registerTimer(long timestamp, ProcessingTimeCallback callback) {
        Timer t = new Timer(timestamp, callback);
        timers.add(t);
        return t;
    }

    /** Timers registered and not yet run or cancelled. */
    public int pendingTimers() {
        return (int) timers.stream().filter(t -> !t.done).count();
    }

    /** Moves the clock to {@code time} and runs the timers due by then, in their order. */
    public void advanceTo(long time) throws Exception {
        now = time;
        for (Timer t : new ArrayList<>(timers)) {
            if (!t.done && t.timestamp <= now) {
                t.done = true;
                timers.remove(t);
                t.callback.onProcessingTime(now);
            }
        }
    }

    private final class Timer implements ScheduledFuture<Object> {
        final long timestamp;
        final ProcessingTimeCallback callback;
        boolean done;
        boolean cancelled;

        Timer(long timestamp, ProcessingTimeCallback callback) {
            this.timestamp = timestamp;
            this.callback = callback;
        }

        @Override
        public long getDelay(TimeUnit unit) {
            return unit.convert(timestamp - now, TimeUnit.MILLISECONDS);
        }

        @Override
        public int compareTo(Delayed o) {
            return Long.compare(getDelay(TimeUnit.MILLISECONDS), o.getDelay(TimeUnit.MILLISECONDS));
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            if (done) {
                return false;
            }
            done = true;
            cancelled = true;
            timers.remove(this);
            return true;
        }

        @Override
        public boolean isCancelled() {
            return cancelled;
        }

        @Override
        public boolean isDone() {
            return done;
        }

        @Override
        public Object get() {
            return null;
        }

        @Override
        public Object get(long timeout, TimeUnit unit) {
            return null;
        }
    }
}
