package io.nearstream.flink.source;

import io.nearstream.client.NearstreamClient;
import java.io.Serializable;
import org.apache.flink.annotation.Internal;

/** Creates the broker connections of the enumerator and the readers (a seam for tests). */
@Internal
@FunctionalInterface
public interface NearstreamClientFactory extends Serializable {

    /** Opens a client for the broker at {@code host:port}. */
    NearstreamClient create(String address) throws Exception;
}
