package io.nearstream.client;

import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A {@link FetchResponse} put together from the answers of several brokers: the results are the
 * parts' own (their blocks still view the parts' frames, nothing is copied), in the order of the
 * request, and closing it closes every part.
 */
final class MergedFetchResponse implements FetchResponse {
    private final List<StreamletFetch> results;
    private final List<FetchResponse> parts;
    private final AtomicBoolean closed = new AtomicBoolean();

    /** Takes over {@code parts}: they are closed with this response. */
    MergedFetchResponse(List<StreamletFetch> results, List<FetchResponse> parts) {
        this.results = List.copyOf(results);
        this.parts = List.copyOf(parts);
    }

    @Override
    public List<StreamletFetch> results() {
        return results;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            closeAll(parts);
        }
    }

    /** Closes every response, even when closing one of them throws. */
    static void closeAll(List<FetchResponse> responses) {
        RuntimeException first = null;
        for (FetchResponse r : responses) {
            try {
                r.close();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    @Override
    public String toString() {
        return "FetchResponse" + results;
    }
}
