package io.nearstream.flink.source.reader.push;

import io.nearstream.jni.ArrowSlotView;
import java.lang.ref.Cleaner;
import java.util.ArrayDeque;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.flink.annotation.Internal;
import org.apache.flink.annotation.VisibleForTesting;

/**
 * The {@link ArrowSlotView}s of one push split reader: one per batch that still holds its slot
 * (fetched and not yet recycled), reused once the batch is recycled. Views are taken on the fetcher
 * thread and given back on whichever thread recycles the batch (the task thread, or the cleaner
 * thread for a batch Flink dropped).
 *
 * <p>{@link #close()} closes only the idle views: a batch still queued or being emitted keeps its
 * view, and with it the slot's mapping ({@link ArrowSlotView#load} retains the region), until it is
 * recycled; the allocator closes when the last view does, so its accounting can be checked then.
 */
@Internal
final class SlotViewPool implements AutoCloseable {

    /** One daemon thread for the whole JVM: it only runs for batches dropped without recycle(). */
    private static final Cleaner CLEANER = Cleaner.create();

    private final BufferAllocator allocator = new RootAllocator();
    private final ArrayDeque<ArrowSlotView> idle = new ArrayDeque<>();

    // Guarded by this.
    private int open;
    private boolean closed;
    private boolean allocatorClosed;

    /** A view to load the next slot into (fetcher thread). */
    synchronized ArrowSlotView take() {
        if (closed) {
            throw new IllegalStateException("the push split reader is closed");
        }
        ArrowSlotView view = idle.pollFirst();
        if (view == null) {
            view = new ArrowSlotView(allocator);
            open++;
        }
        return view;
    }

    /**
     * Drops the view's slot (hands it back to the broker) and keeps the view for the next batch, or
     * closes it once the pool is closed. Any thread; call once per {@link #take()}.
     */
    void giveBack(ArrowSlotView view) {
        try {
            view.clear();
        } finally {
            synchronized (this) {
                if (closed) {
                    closeView(view);
                } else {
                    idle.addFirst(view);
                }
            }
        }
    }

    /**
     * Gives {@code view} back when {@code batch} becomes unreachable without being recycled (a task
     * cancelled with batches in Flink's queue). The action references the view and this pool, never
     * the batch; {@link Cleaner.Cleanable#clean()} runs it at most once, so recycle() calls that.
     */
    Cleaner.Cleanable giveBackWhenUnreachable(Object batch, ArrowSlotView view) {
        return CLEANER.register(batch, () -> giveBack(view));
    }

    /** Closes the idle views now and the others as they come back. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        ArrowSlotView view;
        while ((view = idle.pollFirst()) != null) {
            closeView(view);
        }
        closeAllocatorWhenUnused();
    }

    private void closeView(ArrowSlotView view) {
        try {
            view.close();
        } finally {
            open--;
            closeAllocatorWhenUnused();
        }
    }

    private void closeAllocatorWhenUnused() {
        if (closed && open == 0 && !allocatorClosed) {
            allocatorClosed = true;
            allocator.close(); // fails loudly if a slot's accounting did not return to zero
        }
    }

    /** Bytes of slots currently held by batches. */
    @VisibleForTesting
    long allocatedBytes() {
        return allocator.getAllocatedMemory();
    }

    /** Views not closed (idle or held by a batch). */
    @VisibleForTesting
    synchronized int openViews() {
        return open;
    }

    @VisibleForTesting
    synchronized boolean allocatorClosed() {
        return allocatorClosed;
    }
}
