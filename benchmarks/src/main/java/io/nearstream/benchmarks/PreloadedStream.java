package io.nearstream.benchmarks;

import io.nearstream.benchmarks.kafka.IndexedRecords;
import io.nearstream.client.AppendResult;
import io.nearstream.client.ChunkBuilder;
import io.nearstream.client.Chunks;
import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NettyNearstreamClient;
import io.nearstream.client.Position;
import io.nearstream.client.StreamConfig;
import io.nearstream.client.StreamletMetadata;
import io.nearstream.flink.source.split.NearstreamSplit;
import io.nearstream.process.BrokerProcess;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A broker with one memory-only stream pre-loaded with {@code records} records of {@code
 * recordBytes} bytes, spread evenly over its streamlets in chunks of at most {@code chunkBytes}
 * (built with {@link ChunkBuilder}, appended raw, one chunk per streamlet per Append request, a few
 * requests in flight). Records carry their global index in their first 8 bytes, the rest is a fixed
 * pseudo-random pattern.
 *
 * <p>{@link #boundedSplits()} are the splits a bounded source would read: from the earliest
 * position up to the tail each streamlet had after the pre-load.
 */
public final class PreloadedStream implements AutoCloseable {

    /** System property: the record size in bytes (default 100). */
    public static final String RECORD_BYTES_PROPERTY = "nearstream.bench.record-bytes";

    public static final String STREAM = "bench";

    private static final int APPENDS_IN_FLIGHT = 8;

    private final BrokerProcess broker;
    private final NearstreamClient client;
    private final int streamlets;
    private final long records;
    private final List<StreamletMetadata> metadata;

    private PreloadedStream(
            BrokerProcess broker,
            NearstreamClient client,
            int streamlets,
            long records,
            List<StreamletMetadata> metadata) {
        this.broker = broker;
        this.client = client;
        this.streamlets = streamlets;
        this.records = records;
        this.metadata = metadata;
    }

    /**
     * Starts a broker ({@link BrokerProcess#start(String...)}), creates the stream and appends the
     * records, of {@value #RECORD_BYTES_PROPERTY} bytes (default 100).
     */
    public static PreloadedStream start(int streamlets, int records, int chunkBytes)
            throws Exception {
        return start(
                BrokerProcess.start(),
                streamlets,
                records,
                Integer.getInteger(RECORD_BYTES_PROPERTY, 100),
                chunkBytes);
    }

    /**
     * Creates the stream on {@code broker} and appends the records; the stream owns the broker from
     * now on ({@link #close()} stops it, also when this fails).
     */
    public static PreloadedStream start(
            BrokerProcess broker, int streamlets, int records, int recordBytes, int chunkBytes)
            throws Exception {
        NearstreamClient client = null;
        try {
            client = NettyNearstreamClient.connect(broker.address());
            client.createStream(StreamConfig.of(STREAM, streamlets)).get(30, TimeUnit.SECONDS);
            long start = System.nanoTime();
            load(client, streamlets, records, recordBytes, chunkBytes);
            List<StreamletMetadata> md =
                    new ArrayList<>(client.metadata(STREAM).get(30, TimeUnit.SECONDS));
            md.sort(Comparator.comparingInt(StreamletMetadata::streamlet));
            System.out.printf(
                    "# pre-loaded %,d records of %d B into %d streamlets (chunks <= %d B) in %.2f s;"
                            + " broker %s, binary %s%n",
                    records,
                    recordBytes,
                    streamlets,
                    chunkBytes,
                    (System.nanoTime() - start) / 1e9,
                    broker.address(),
                    BrokerProcess.binary());
            return new PreloadedStream(broker, client, streamlets, records, md);
        } catch (Exception | Error e) {
            if (client != null) {
                client.close();
            }
            broker.close();
            throw e;
        }
    }

    private static void load(
            NearstreamClient client, int streamlets, int records, int recordBytes, int chunkBytes)
            throws Exception {
        int perChunk =
                Math.max(
                        1,
                        (chunkBytes - Chunks.HEADER_BYTES)
                                / (Chunks.RECORD_PREFIX_BYTES + recordBytes));
        long[] left = new long[streamlets];
        for (int s = 0; s < streamlets; s++) {
            left[s] = records / streamlets + (s < records % streamlets ? 1 : 0);
        }
        byte[] record = IndexedRecords.template(recordBytes);
        ChunkBuilder builder = new ChunkBuilder(chunkBytes);
        Deque<CompletableFuture<List<AppendResult>>> inFlight = new ArrayDeque<>();
        long index = 0;
        long timestamp = System.currentTimeMillis();
        while (true) {
            List<Integer> targets = new ArrayList<>(streamlets);
            List<byte[]> chunks = new ArrayList<>(streamlets);
            for (int s = 0; s < streamlets; s++) {
                if (left[s] == 0) {
                    continue;
                }
                int n = (int) Math.min(perChunk, left[s]);
                builder.reset();
                for (int r = 0; r < n; r++) {
                    IndexedRecords.stamp(record, index++);
                    builder.add(record);
                }
                left[s] -= n;
                targets.add(s);
                chunks.add(builder.build(0, 0, timestamp));
            }
            if (targets.isEmpty()) {
                break;
            }
            int[] streamletIds = targets.stream().mapToInt(Integer::intValue).toArray();
            inFlight.add(client.append(STREAM, streamletIds, chunks));
            if (inFlight.size() >= APPENDS_IN_FLIGHT) {
                check(inFlight.poll());
            }
        }
        while (!inFlight.isEmpty()) {
            check(inFlight.poll());
        }
    }

    private static void check(CompletableFuture<List<AppendResult>> f) throws Exception {
        for (AppendResult r : f.get(60, TimeUnit.SECONDS)) {
            if (!r.ok()) {
                throw new IllegalStateException(
                        "append to streamlet "
                                + r.streamlet()
                                + " failed: "
                                + r.status()
                                + " "
                                + r.message());
            }
        }
    }

    public NearstreamClient client() {
        return client;
    }

    public BrokerProcess broker() {
        return broker;
    }

    public String stream() {
        return STREAM;
    }

    public int streamlets() {
        return streamlets;
    }

    /** Records in the stream. */
    public long records() {
        return records;
    }

    /** Where each streamlet's data ends, indexed by streamlet. */
    public Position[] tails() {
        return metadata.stream().map(StreamletMetadata::tail).toArray(Position[]::new);
    }

    /** One split per streamlet, from the earliest position to the tail after the pre-load. */
    public List<NearstreamSplit> boundedSplits() {
        List<NearstreamSplit> splits = new ArrayList<>(streamlets);
        for (StreamletMetadata m : metadata) {
            splits.add(new NearstreamSplit(STREAM, m.streamlet(), Position.EARLIEST, 0, m.tail()));
        }
        return splits;
    }

    /** The broker's fetch RPC counter ({@code nearstream_fetch_requests_total}). */
    public long brokerFetchRequests() throws Exception {
        return brokerStat("nearstream_fetch_requests_total");
    }

    /** One broker counter (0 when it does not exist). */
    public long brokerStat(String name) throws Exception {
        Map<String, Long> stats = client.stats().get(30, TimeUnit.SECONDS);
        return stats.getOrDefault(name, 0L);
    }

    @Override
    public void close() {
        try {
            client.close();
        } finally {
            broker.close();
        }
    }

    @Override
    public String toString() {
        return "PreloadedStream{"
                + STREAM
                + ", "
                + streamlets
                + " streamlets, "
                + records
                + " records, tails "
                + Arrays.toString(tails())
                + "}";
    }
}
