package io.nearstream.jni;

import java.io.IOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongFunction;

/**
 * The read-only mappings of the segment files that the view slots of one {@link ShmRegion} name
 * (docs/shm-layout.md, "Segment files"), shared by every slot of the region and reference counted
 * by file number.
 *
 * <p>Why a mapping may be kept between slots: the broker never reuses a number for another file and
 * never changes a file's contents while an unreleased slot names it, so a mapping of number {@code
 * n} stays valid for every later slot that names {@code n}. Why it must not be unmapped while
 * referenced: a held slot (also a batch queued in Flink and not yet recycled) reads records through
 * it. So each slot takes one reference per buffer-table entry when it is loaded and drops it when
 * it is released; a mapping nobody references is idle and stays mapped for the next slot until more
 * than {@code maxIdle} are idle (then the longest idle goes) or the region closes.
 *
 * <p>Thread-safe: slots are loaded on a fetcher thread and released on whichever thread drops the
 * last Arrow buffer.
 */
public final class SegmentFileMappings implements AutoCloseable {
    /** Idle mappings kept per region before the longest idle one is unmapped. */
    public static final int DEFAULT_MAX_IDLE = 64;

    /** One file mapped read-only; {@link #release} it once per {@link #acquire}. */
    public static final class Mapping {
        private final long number;
        private final long address;
        private final long length;
        private int refs; // guarded by the owner

        private Mapping(long number, long address, long length) {
            this.number = number;
            this.address = address;
            this.length = length;
        }

        public long number() {
            return number;
        }

        /** First byte of the mapping. */
        public long address() {
            return address;
        }

        /** Bytes mapped. */
        public long length() {
            return length;
        }
    }

    private final LongFunction<Path> pathOf;
    private final int maxIdle;
    private final Map<Long, Mapping> mapped = new HashMap<>();

    /** Mappings without references, longest idle first. */
    private final LinkedHashMap<Long, Mapping> idle = new LinkedHashMap<>();

    private boolean closed;

    /**
     * @param pathOf the path of segment file {@code n}
     * @param maxIdle how many unreferenced mappings to keep for later slots
     */
    public SegmentFileMappings(LongFunction<Path> pathOf, int maxIdle) {
        if (maxIdle < 0) {
            throw new IllegalArgumentException("maxIdle " + maxIdle);
        }
        this.pathOf = pathOf;
        this.maxIdle = maxIdle;
    }

    /**
     * A reference to the mapping of segment file {@code number}, at least {@code fileBytes} long:
     * the cached one, or a new read-only mapping of the file's first {@code fileBytes} bytes.
     *
     * @throws IOException when the file cannot be mapped (missing, shorter than {@code fileBytes}),
     *     or the mappings are closed
     */
    public synchronized Mapping acquire(long number, long fileBytes) throws IOException {
        if (closed) {
            throw new IOException("the segment file mappings of this push region are closed");
        }
        if (number <= 0 || fileBytes <= 0) {
            throw new IOException(
                    "segment file " + number + " of " + fileBytes + " bytes: both must be >= 1");
        }
        Mapping m = mapped.get(number);
        if (m != null && m.length < fileBytes) {
            if (m.refs > 0) {
                // The broker keeps a referenced file's size; a larger size means the layout broke.
                throw new IOException(
                        "segment file "
                                + number
                                + " is mapped with "
                                + m.length
                                + " bytes while a slot names it with "
                                + fileBytes);
            }
            idle.remove(number);
            mapped.remove(number);
            unmap(m);
            m = null;
        }
        if (m == null) {
            Path path = pathOf.apply(number);
            m = new Mapping(number, Natives.mapReadOnly(path.toString(), fileBytes), fileBytes);
            mapped.put(number, m);
        } else if (m.refs == 0) {
            idle.remove(number);
        }
        m.refs++;
        return m;
    }

    /** Drops a reference taken by {@link #acquire}; the mapping becomes idle with its last one. */
    public synchronized void release(Mapping m) {
        if (m.refs <= 0 || mapped.get(m.number) != m) {
            throw new IllegalStateException("segment file " + m.number + " released too often");
        }
        if (--m.refs > 0) {
            return;
        }
        if (closed) {
            mapped.remove(m.number);
            unmap(m);
            return;
        }
        idle.put(m.number, m);
        Iterator<Mapping> oldest = idle.values().iterator();
        while (idle.size() > maxIdle) {
            Mapping evicted = oldest.next();
            oldest.remove();
            mapped.remove(evicted.number);
            unmap(evicted);
        }
    }

    /** Mappings open now (referenced or idle). */
    public synchronized int mappedCount() {
        return mapped.size();
    }

    /** Mappings open now that no slot references. */
    public synchronized int idleCount() {
        return idle.size();
    }

    /**
     * Unmaps the idle mappings now and every other one when its last reference goes; {@link
     * #acquire} fails from now on. Idempotent.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Mapping m : idle.values()) {
            mapped.remove(m.number);
            unmap(m);
        }
        idle.clear();
    }

    private static void unmap(Mapping m) {
        try {
            Natives.unmapRegion(m.address, m.length);
        } catch (NativeException e) {
            throw new IllegalStateException("unmapping segment file " + m.number, e);
        }
    }
}
