package io.nearstream.flink.source.reader.push;

import io.nearstream.client.ChunkBlock;
import io.nearstream.client.ChunkCursor;
import io.nearstream.client.FetchEntry;
import io.nearstream.client.FetchResponse;
import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NearstreamClientException;
import io.nearstream.client.Position;
import io.nearstream.client.RecordFilter;
import io.nearstream.client.StreamletFetch;
import io.nearstream.flink.source.BrokerErrors;
import io.nearstream.flink.source.reader.RecordRun;
import io.nearstream.flink.source.reader.SplitCursor;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.flink.annotation.Internal;

/**
 * Reads, with one Fetch RPC, a chunk the broker could not push because it does not fit one of the
 * region's slots (a {@code SLOT_FETCH_CHUNK} marker stands in its place in the ring). The broker
 * keeps the chunk in its segment, so nothing is lost and the split's order holds: the push reader
 * emits these records before the next slot's. Rare by design (a chunk larger than a slot), so a
 * blocking call on the fetcher thread is fine; a larger {@code push.slot-bytes} avoids it.
 */
@Internal
final class OversizeChunkFetcher {

    private final NearstreamClient client;
    private final String stream;
    private final long timeoutMs;
    private final ChunkCursor cursor = new ChunkCursor();
    // The subscription's filter: the broker did not apply it to a chunk it left to a fetch.
    private final RecordFilter filter;

    OversizeChunkFetcher(
            NearstreamClient client, String stream, long timeoutMs, RecordFilter filter) {
        this.client = client;
        this.stream = stream;
        this.timeoutMs = timeoutMs;
        this.filter = filter;
    }

    /**
     * The records of the chunk of {@code bytes} bytes at {@code at}, as one run (none when the
     * split had emitted all of them before a restore).
     */
    List<RecordRun> read(int streamlet, Position at, int bytes, SplitCursor split)
            throws IOException {
        String what =
                "Fetch of the "
                        + bytes
                        + "-byte chunk at "
                        + at
                        + " of streamlet "
                        + streamlet
                        + " of stream '"
                        + stream
                        + "' (larger than a push slot)";
        FetchResponse response;
        try {
            response =
                    client.fetch(stream, 0, List.of(new FetchEntry(streamlet, at, bytes)))
                            .get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(what + " was interrupted", e);
        } catch (Exception e) {
            throw BrokerErrors.failure(what, e);
        }
        try {
            StreamletFetch result = response.results().get(0);
            if (!result.ok()) {
                throw BrokerErrors.failure(what, result.status(), result.message());
            }
            for (ChunkBlock block : result.blocks()) {
                cursor.reset(block);
                while (cursor.nextChunk()) {
                    if (!cursor.position().equals(at) || cursor.header().totalSize() != bytes) {
                        throw new IOException(
                                what
                                        + " returned a chunk of "
                                        + cursor.header().totalSize()
                                        + " bytes at "
                                        + cursor.position());
                    }
                    RecordRun run =
                            RecordRun.copyChunk(
                                    cursor, streamlet, split.takeRecordsToSkip(at), filter);
                    return run != null ? List.of(run) : List.of();
                }
            }
            throw new IOException(what + " returned no chunk");
        } catch (NearstreamClientException e) {
            throw BrokerErrors.fatal(what, e); // CRC or framing: the same bytes fail the same way
        } finally {
            response.close();
        }
    }
}
