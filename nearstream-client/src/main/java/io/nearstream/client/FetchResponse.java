package io.nearstream.client;

import java.util.List;

/**
 * A decoded Fetch response. Its {@link ChunkBlock}s point into the response buffer without a copy,
 * so the response must be closed once the blocks have been read; closing is idempotent.
 */
public interface FetchResponse extends AutoCloseable {

    List<StreamletFetch> results();

    /** Releases the response buffer; blocks must not be read afterwards. */
    @Override
    void close();
}
