package io.nearstream.flink.source;

import org.apache.flink.annotation.PublicEvolving;

/** How the source's readers get data from the broker. */
@PublicEvolving
public enum ReadMode {
    /**
     * Every source reader keeps issuing Fetch RPCs (long-poll) over TCP for its streamlets. Works
     * wherever the broker is reachable; the classic design.
     */
    PULL
}
