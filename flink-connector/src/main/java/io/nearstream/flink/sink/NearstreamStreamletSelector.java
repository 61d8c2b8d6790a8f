package io.nearstream.flink.sink;

import java.io.Serializable;
import org.apache.flink.annotation.PublicEvolving;

/** Picks the streamlet of an element, instead of hashing a key. */
@PublicEvolving
@FunctionalInterface
public interface NearstreamStreamletSelector<T> extends Serializable {

    /** A streamlet in {@code [0, streamlets)}; anything else fails the job. */
    int streamlet(T element, int streamlets);
}
