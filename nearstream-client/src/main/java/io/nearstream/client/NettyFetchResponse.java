package io.nearstream.client;

import io.netty.buffer.ByteBuf;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/** A {@link FetchResponse} whose blocks are views of the retained response frame. */
final class NettyFetchResponse implements FetchResponse {
    private final List<StreamletFetch> results;
    private final ByteBuf frame;
    private final AtomicBoolean closed = new AtomicBoolean();

    /** Takes over one reference of {@code frame}. */
    NettyFetchResponse(List<StreamletFetch> results, ByteBuf frame) {
        this.results = results;
        this.frame = frame;
    }

    @Override
    public List<StreamletFetch> results() {
        return results;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            frame.release();
        }
    }

    @Override
    public String toString() {
        return "FetchResponse" + results;
    }
}
