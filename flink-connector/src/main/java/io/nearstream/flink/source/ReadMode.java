package io.nearstream.flink.source;

import org.apache.flink.annotation.PublicEvolving;

/** How the source's readers get data from the broker. */
@PublicEvolving
public enum ReadMode {
    /**
     * Every source reader keeps issuing Fetch RPCs (long-poll) over TCP for its streamlets. Works
     * wherever the broker is reachable; the classic design.
     */
    PULL,

    /**
     * The broker pushes whole chunks into a shared memory ring per reader ({@code /dev/shm}); the
     * readers of one source in a TaskManager share one push subscription. Needs the broker on the
     * reader's host and the JNI library of {@code nearstream-jni-bridge} (Linux x86-64).
     */
    PUSH,

    /**
     * {@link #PUSH} for readers on the broker's host, {@link #PULL} for the others (decided per
     * reader from its TaskManager's host name).
     */
    AUTO
}
