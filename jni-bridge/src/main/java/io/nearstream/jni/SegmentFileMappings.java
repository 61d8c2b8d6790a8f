package io.nearstream.jni;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongFunction;

/**
 * The read-only mappings of the segment files of one broker process (docs/shm-layout.md, "Segment
 * files"), shared by every slot of every region this JVM maps from that broker ({@link #shared}),
 * and reference counted by file number.
 *
 * <p>Why they outlive a region: mapping a file costs a page-table entry per 4 KiB page (a fault
 * each, or as much kernel work up front), and unmapping as much again - about what the broker's
 * copy of the records cost, which is what view slots are there to save. The broker gives a dropped
 * segment's file, under its number, to a later segment, so a JVM that keeps its mappings reads the
 * recycled files of a long-running stream without touching the page tables again; a resubscription
 * (a Flink failover, a split reassignment) finds them too.
 *
 * <p>Why a mapping may be kept between slots: the broker never reuses a number for another file and
 * never changes a file's contents while an unreleased slot names it, so a mapping of number {@code
 * n} stays valid for every later slot that names {@code n}. Why it must not be unmapped while
 * referenced: a held slot (also a batch queued in Flink and not yet recycled) reads records through
 * it. So each slot takes one reference per buffer-table entry when it is loaded and drops it when
 * it is released; a mapping nobody references is idle and stays mapped for the next slot until more
 * than {@code maxIdleBytes} are idle (then the longest idle goes), its file is unlinked (the broker
 * freed it: an idle mapping would keep its memory; checked at most once a second, when a new file
 * is mapped), or the broker is replaced (a new broker epoch, {@link #shared}).
 *
 * <p>Thread-safe: slots are loaded on a fetcher thread and released on whichever thread drops the
 * last Arrow buffer.
 */
public final class SegmentFileMappings implements AutoCloseable {
    /**
     * Address space of idle mappings kept per broker before the longest idle one is unmapped. Only
     * page tables (0.2 %) are this JVM's own: the pages are the broker's tmpfs pages.
     */
    public static final long DEFAULT_MAX_IDLE_BYTES = 4L << 30;

    private static final long SWEEP_INTERVAL_NANOS = 1_000_000_000L;

    /** The JVM's mappings per broker: (directory, prefix) -> the current broker epoch's. */
    private static final Map<String, SegmentFileMappings> SHARED = new HashMap<>();

    /**
     * The mappings of the broker whose segment files are {@code dir/prefix<n>}, at {@code
     * brokerEpoch}: one instance per broker process for the whole JVM. A different epoch means
     * another broker process uses the same names (its pid was reused): the previous instance is
     * closed (its mappings are of unlinked files) and a new one made.
     */
    public static SegmentFileMappings shared(Path dir, String prefix, long brokerEpoch) {
        String key = dir.toAbsolutePath() + "/" + prefix;
        synchronized (SHARED) {
            // The other brokers' idle mappings of files they unlinked (e.g. they exited) go now:
            // no acquire of theirs may ever come to sweep them. (The emptied instances stay, a
            // few fields each: a region of theirs may still use them.)
            for (Map.Entry<String, SegmentFileMappings> e : SHARED.entrySet()) {
                if (!e.getKey().equals(key)) {
                    e.getValue().sweepUnlinkedNow();
                }
            }
            SegmentFileMappings m = SHARED.get(key);
            if (m != null && m.brokerEpoch == brokerEpoch) {
                return m;
            }
            if (m != null) {
                m.close();
            }
            SegmentFileMappings fresh =
                    new SegmentFileMappings(
                            n -> dir.resolve(prefix + Long.toUnsignedString(n)),
                            Integer.MAX_VALUE,
                            DEFAULT_MAX_IDLE_BYTES,
                            brokerEpoch);
            SHARED.put(key, fresh);
            return fresh;
        }
    }

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
    private final long maxIdleBytes;
    private final long brokerEpoch;
    private final Map<Long, Mapping> mapped = new HashMap<>();
    private final long sweepIntervalNanos;
    private long idleBytes;
    private long lastSweepNanos = System.nanoTime();

    /** Mappings without references, longest idle first. */
    private final LinkedHashMap<Long, Mapping> idle = new LinkedHashMap<>();

    private boolean closed;

    /**
     * @param pathOf the path of segment file {@code n}
     * @param maxIdle how many unreferenced mappings to keep for later slots
     * @param maxIdleBytes how many bytes of them
     * @param brokerEpoch the broker process whose files these are
     */
    public SegmentFileMappings(
            LongFunction<Path> pathOf, int maxIdle, long maxIdleBytes, long brokerEpoch) {
        this(pathOf, maxIdle, maxIdleBytes, brokerEpoch, SWEEP_INTERVAL_NANOS);
    }

    SegmentFileMappings(
            LongFunction<Path> pathOf,
            int maxIdle,
            long maxIdleBytes,
            long brokerEpoch,
            long sweepIntervalNanos) {
        if (maxIdle < 0 || maxIdleBytes < 0) {
            throw new IllegalArgumentException("maxIdle " + maxIdle + ", bytes " + maxIdleBytes);
        }
        this.pathOf = pathOf;
        this.maxIdle = maxIdle;
        this.maxIdleBytes = maxIdleBytes;
        this.brokerEpoch = brokerEpoch;
        this.sweepIntervalNanos = sweepIntervalNanos;
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
            dropIdle(m);
            m = null;
        }
        if (m == null) {
            sweepUnlinked();
            Path path = pathOf.apply(number);
            m = new Mapping(number, Natives.mapReadOnly(path.toString(), fileBytes), fileBytes);
            mapped.put(number, m);
        } else if (m.refs == 0) {
            idle.remove(number);
            idleBytes -= m.length;
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
        idleBytes += m.length;
        Iterator<Mapping> oldest = idle.values().iterator();
        while (idle.size() > maxIdle || idleBytes > maxIdleBytes) {
            Mapping evicted = oldest.next();
            oldest.remove();
            idleBytes -= evicted.length;
            mapped.remove(evicted.number);
            unmap(evicted);
        }
    }

    /** Unmaps an idle mapping now. */
    private void dropIdle(Mapping m) {
        idle.remove(m.number);
        idleBytes -= m.length;
        mapped.remove(m.number);
        unmap(m);
    }

    /**
     * Unmaps the idle mappings whose file the broker unlinked (at most once a second): only this
     * JVM's mapping would keep that memory.
     */
    private void sweepUnlinked() {
        long now = System.nanoTime();
        if (now - lastSweepNanos < sweepIntervalNanos) {
            return;
        }
        lastSweepNanos = now;
        for (Mapping m : idle.values().toArray(new Mapping[0])) {
            if (!Files.exists(pathOf.apply(m.number))) {
                dropIdle(m);
            }
        }
    }

    /** Sweeps now, whenever the last sweep was. */
    private synchronized void sweepUnlinkedNow() {
        lastSweepNanos = System.nanoTime() - sweepIntervalNanos;
        sweepUnlinked();
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
        idleBytes = 0;
    }

    private static void unmap(Mapping m) {
        try {
            Natives.unmapRegion(m.address, m.length);
        } catch (NativeException e) {
            throw new IllegalStateException("unmapping segment file " + m.number, e);
        }
    }
}
