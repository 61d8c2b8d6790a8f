package io.nearstream.jni;

import java.nio.ByteBuffer;

/**
 * The whole native surface of Nearstream's JNI library, {@code libnearstream_jni.so}: what Java
 * cannot do itself. Everything else (reading and writing control words, wrapping slots as Arrow
 * buffers) happens in Java on a direct {@link ByteBuffer} over the mapping.
 *
 * <p>Rules of this bridge: one package-private class, {@code static native} methods only, no
 * overloading, primitive {@code long} addresses and lengths; the C side never reads or writes Java
 * fields; every failure becomes a {@link NativeException} carrying {@code errno}. {@code javac -h}
 * generates the C header {@code io_nearstream_jni_Natives.h} from this class during the build.
 */
final class Natives {
    /** {@link #futexWait}: woken by a {@link #futexWake} (or spuriously; the caller re-checks). */
    static final int FUTEX_WOKEN = 0;

    /** {@link #futexWait}: the timeout elapsed. */
    static final int FUTEX_TIMED_OUT = 1;

    /** {@link #futexWait}: the word did not hold {@code expected} when the call started. */
    static final int FUTEX_VALUE_CHANGED = 2;

    static {
        NativeLibrary.load();
    }

    private Natives() {}

    /**
     * Opens {@code path} {@code O_RDWR}, maps its first {@code length} bytes {@code MAP_SHARED}
     * read-write and closes the descriptor. Fails (instead of risking {@code SIGBUS} later) when
     * the file is shorter than {@code length}.
     *
     * @return the address of the mapping, page-aligned
     */
    static native long mapRegion(String path, long length) throws NativeException;

    /**
     * Opens {@code path} {@code O_RDONLY}, maps its first {@code length} bytes {@code MAP_SHARED}
     * with {@code PROT_READ} only and closes the descriptor: a segment file of a view slot, which
     * the broker writes and the consumer only reads. Fails (instead of risking {@code SIGBUS}
     * later) when the file is shorter than {@code length}.
     *
     * @return the address of the mapping, page-aligned; {@link #unmapRegion} unmaps it
     */
    static native long mapReadOnly(String path, long length) throws NativeException;

    /**
     * {@code munmap(address, length)} of a mapping made by {@link #mapRegion} or {@link
     * #mapReadOnly}.
     */
    static native void unmapRegion(long address, long length) throws NativeException;

    /**
     * Wraps {@code length} bytes at {@code address} as a direct {@link ByteBuffer} ({@code
     * NewDirectByteBuffer}); the buffer does not own the memory. {@code length} must fit an int.
     */
    static native ByteBuffer directBuffer(long address, long length) throws NativeException;

    /**
     * Shared (not private) {@code FUTEX_WAIT} on the 32-bit word at {@code address}: sleeps while
     * it holds {@code expected}, at most {@code timeoutNanos} (negative: no limit). {@code EINTR}
     * counts as a wake.
     *
     * @return {@link #FUTEX_WOKEN}, {@link #FUTEX_TIMED_OUT} or {@link #FUTEX_VALUE_CHANGED}
     */
    static native int futexWait(long address, int expected, long timeoutNanos)
            throws NativeException;

    /**
     * Shared {@code FUTEX_WAKE} of up to {@code count} waiters on the word at {@code address}.
     *
     * @return how many waiters were woken
     */
    static native int futexWake(long address, int count) throws NativeException;

    /**
     * The {@code offsetof}/{@code sizeof} values of {@code nearstream/shm_layout.h}, computed by
     * the C compiler, in the order {@code ShmLayoutTest} lists them, then geometry samples.
     */
    static native long[] offsetsOfLayout();

    /** Does nothing: the cost of a JNI transition, for JMH. */
    static native void noop();
}
