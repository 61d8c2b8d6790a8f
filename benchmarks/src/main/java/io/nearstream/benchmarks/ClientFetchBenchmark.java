package io.nearstream.benchmarks;

import io.nearstream.client.ChunkBlock;
import io.nearstream.client.ChunkCursor;
import io.nearstream.client.FetchEntry;
import io.nearstream.client.FetchResponse;
import io.nearstream.client.NearstreamClient;
import io.nearstream.client.Position;
import io.nearstream.client.StreamletFetch;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * The client alone, to tell the client's cost from the reader's: the same pre-loaded stream and
 * fetch budgets as {@link PullReaderBenchmark}, read by a plain loop of {@link
 * NearstreamClient#fetch} calls (one in flight, like the reader, unless pipelined) over all
 * streamlets, each response walked with a {@link ChunkCursor}.
 *
 * <ul>
 *   <li>{@code clientFetchCopy}: CRC-checked, every record copied into a new {@code byte[]} — what
 *       the reader does, minus its per-record objects and split bookkeeping.
 *   <li>{@code clientFetchNoCopy}: CRC-checked, records only walked (their length consumed).
 *   <li>{@code clientFetchNoVerify}: no payload CRC check, records only walked: the transport and
 *       response decoding alone.
 *   <li>{@code clientFetchPipelinedCopy}: as {@code clientFetchCopy}, but the next fetch is sent as
 *       soon as a response arrives, before its records are copied (one fetch ahead): what a reader
 *       that prefetches could reach.
 * </ul>
 */
@OperationsPerInvocation(BenchmarkBase.RECORDS_PER_INVOCATION)
public class ClientFetchBenchmark extends PreloadedStreamBenchmark {

    @Param({"4"})
    public int streamlets;

    @Param({"131072", "1048576", "4194304"})
    public int fetchBytes;

    @Param({"65536"})
    public int chunkBytes;

    private Position[] tails;
    private final ChunkCursor verifyingCursor = new ChunkCursor(true);
    private final ChunkCursor plainCursor = new ChunkCursor(false);

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        startStream(streamlets, chunkBytes);
        tails = stream.tails();
    }

    @Benchmark
    public void clientFetchCopy(FetchCounters counters, Blackhole bh) throws Exception {
        readAll(counters, bh, verifyingCursor, true, false);
    }

    @Benchmark
    public void clientFetchNoCopy(FetchCounters counters, Blackhole bh) throws Exception {
        readAll(counters, bh, verifyingCursor, false, false);
    }

    @Benchmark
    public void clientFetchNoVerify(FetchCounters counters, Blackhole bh) throws Exception {
        readAll(counters, bh, plainCursor, false, false);
    }

    @Benchmark
    public void clientFetchPipelinedCopy(FetchCounters counters, Blackhole bh) throws Exception {
        readAll(counters, bh, verifyingCursor, true, true);
    }

    /**
     * Reads every streamlet from the earliest position to its tail. Unpipelined, the next fetch is
     * sent after the current response was read; pipelined, as soon as the current response arrived
     * (its {@code next} positions say where to continue), so the broker and the client's I/O thread
     * work on fetch n+1 while this thread copies the records of fetch n.
     */
    private void readAll(
            FetchCounters counters,
            Blackhole bh,
            ChunkCursor cursor,
            boolean copy,
            boolean pipelined)
            throws Exception {
        NearstreamClient client = stream.client();
        Position[] positions = new Position[streamlets];
        boolean[] done = new boolean[streamlets];
        for (int s = 0; s < streamlets; s++) {
            positions[s] = Position.EARLIEST;
            done[s] = tails[s].isEarliest();
        }
        long records = 0;
        long bytes = 0;
        long rpcs = 0;
        CompletableFuture<FetchResponse> next = fetchFrom(client, positions, done);
        while (next != null) {
            rpcs++;
            try (FetchResponse response = next.get(30, TimeUnit.SECONDS)) {
                for (StreamletFetch result : response.results()) {
                    if (!result.ok()) {
                        throw new IllegalStateException(
                                "fetch of streamlet "
                                        + result.streamlet()
                                        + " failed: "
                                        + result.status()
                                        + " "
                                        + result.message());
                    }
                    int s = result.streamlet();
                    positions[s] = result.next();
                    done[s] = positions[s].compareTo(tails[s]) >= 0;
                }
                next = pipelined ? fetchFrom(client, positions, done) : null;
                for (StreamletFetch result : response.results()) {
                    for (ChunkBlock block : result.blocks()) {
                        bytes += block.data().remaining();
                        cursor.reset(block);
                        while (cursor.nextChunk()) {
                            while (cursor.nextRecord()) {
                                if (copy) {
                                    bh.consume(cursor.copyRecord());
                                } else {
                                    bh.consume(cursor.recordLength());
                                }
                                records++;
                            }
                        }
                    }
                }
            }
            if (!pipelined) {
                next = fetchFrom(client, positions, done);
            }
        }
        invocationDone(counters, rpcs, records, bytes);
    }

    /**
     * One Fetch over the streamlets not done yet, {@code fetchBytes} split evenly between them;
     * null when all are done.
     */
    private CompletableFuture<FetchResponse> fetchFrom(
            NearstreamClient client, Position[] positions, boolean[] done) {
        int open = 0;
        for (boolean d : done) {
            open += d ? 0 : 1;
        }
        if (open == 0) {
            return null;
        }
        int perStreamlet = Math.max(1, fetchBytes / open);
        List<FetchEntry> entries = new ArrayList<>(open);
        for (int s = 0; s < streamlets; s++) {
            if (!done[s]) {
                entries.add(new FetchEntry(s, positions[s], perStreamlet));
            }
        }
        return client.fetch(stream.stream(), 0, entries);
    }
}
