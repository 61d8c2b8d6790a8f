package io.nearstream.benchmarks.sink;

import io.nearstream.benchmarks.kafka.IndexedRecords;
import io.nearstream.client.ChunkCursor;
import io.nearstream.client.FetchEntry;
import io.nearstream.client.FetchResponse;
import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NettyNearstreamClient;
import io.nearstream.client.Position;
import io.nearstream.client.StreamletFetch;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A reader that notes when records become fetchable: a thread of its own, with a connection of its
 * own, long-polling one streamlet of the stream (Fetch with {@code max_wait_ms}, so the broker
 * answers as soon as a commit makes chunks visible). Each answer holding chunks is one observation:
 * the generator index of the first record of the first chunk and {@link System#nanoTime()} when the
 * answer arrived.
 *
 * <p>It asks for one chunk at a time ({@code max_bytes} 1: the broker returns at least one whole
 * chunk) and then continues at the streamlet's tail rather than after that chunk. In a stream that
 * only an exactly-once sink writes, every committed transaction is one new group after the tail, so
 * each observation is the first chunk of one newly committed transaction in this streamlet, and the
 * reader costs two fetches a transaction instead of reading the whole stream (which would add
 * broker and JVM CPU to the figures it sits beside). A transaction committed while the previous
 * answer was on its way is skipped, not mismeasured: its records are behind the tail the reader
 * jumps to. A transaction commits in all streamlets at once, so one streamlet is enough.
 */
final class VisibilityReader implements AutoCloseable {

    private static final int MAX_WAIT_MS = 500;

    private final NearstreamClient client;
    private final String stream;
    private final int streamlet;
    private final Thread thread;
    private final List<long[]> observations = new ArrayList<>();
    private volatile boolean stopped;
    private volatile Throwable failure;

    VisibilityReader(String broker, String stream, int streamlet) {
        this.client = NettyNearstreamClient.connect(broker);
        this.stream = stream;
        this.streamlet = streamlet;
        this.thread = new Thread(this::run, "sink-bench-visibility-reader");
        this.thread.setDaemon(true);
        this.thread.start();
    }

    private void run() {
        Position position = Position.EARLIEST;
        ChunkCursor cursor = new ChunkCursor(false);
        try {
            while (!stopped) {
                FetchResponse response =
                        client.fetch(
                                        stream,
                                        MAX_WAIT_MS,
                                        List.of(new FetchEntry(streamlet, position, 1)))
                                .get(30, TimeUnit.SECONDS);
                long now = System.nanoTime();
                try {
                    StreamletFetch f = response.results().get(0);
                    if (!f.ok()) {
                        throw new IllegalStateException(
                                "fetch of streamlet "
                                        + streamlet
                                        + " of "
                                        + stream
                                        + " at "
                                        + position
                                        + ": "
                                        + f.status()
                                        + " "
                                        + f.message());
                    }
                    if (f.blocks().isEmpty()) {
                        position = f.next();
                        continue;
                    }
                    cursor.reset(f.blocks().get(0));
                    if (cursor.nextChunk() && cursor.nextRecord()) {
                        long index = IndexedRecords.index(cursor.copyRecord());
                        synchronized (observations) {
                            observations.add(new long[] {index, now});
                        }
                    }
                    position = f.tail().compareTo(f.next()) > 0 ? f.tail() : f.next();
                } finally {
                    response.close();
                }
            }
        } catch (Throwable t) {
            if (!stopped) {
                failure = t;
            }
        }
    }

    /** (generator index of the first record of the chunk, nanoTime seen), in the order seen. */
    List<long[]> observations() {
        synchronized (observations) {
            return new ArrayList<>(observations);
        }
    }

    /** Why the reader stopped early, or null. */
    Throwable failure() {
        return failure;
    }

    @Override
    public void close() throws InterruptedException {
        stopped = true;
        thread.join(TimeUnit.SECONDS.toMillis(5));
        client.close();
    }
}
