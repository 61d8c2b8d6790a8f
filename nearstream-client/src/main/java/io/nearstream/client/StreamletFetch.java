package io.nearstream.client;

import java.util.List;

/**
 * The result of one fetch entry: chunks from the asked position on ({@code blocks}), where to
 * continue ({@code next}) and the streamlet's tail. A non-OK {@code status} comes with no blocks.
 */
public record StreamletFetch(
        int streamlet,
        StatusCode status,
        String message,
        Position next,
        Position tail,
        List<ChunkBlock> blocks)
        implements EntryStatus {

    public boolean ok() {
        return status == StatusCode.OK;
    }
}
