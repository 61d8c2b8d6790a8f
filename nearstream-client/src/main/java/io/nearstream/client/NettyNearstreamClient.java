package io.nearstream.client;

import io.nearstream.client.ProtocolCodec.AppendEntry;
import io.nearstream.client.ProtocolCodec.AppendRequest;
import io.nearstream.client.ProtocolCodec.ClusterMetadataRequest;
import io.nearstream.client.ProtocolCodec.CreateStreamRequest;
import io.nearstream.client.ProtocolCodec.DeleteStreamRequest;
import io.nearstream.client.ProtocolCodec.DescribeStreamRequest;
import io.nearstream.client.ProtocolCodec.FetchRequest;
import io.nearstream.client.ProtocolCodec.HandshakeRequest;
import io.nearstream.client.ProtocolCodec.HandshakeResponse;
import io.nearstream.client.ProtocolCodec.ListStreamsRequest;
import io.nearstream.client.ProtocolCodec.LookupTimestampRequest;
import io.nearstream.client.ProtocolCodec.MetadataRequest;
import io.nearstream.client.ProtocolCodec.MoveStreamletRequest;
import io.nearstream.client.ProtocolCodec.PushCloseRequest;
import io.nearstream.client.ProtocolCodec.PushSubscribeRequest;
import io.nearstream.client.ProtocolCodec.PushUpdateRequest;
import io.nearstream.client.ProtocolCodec.Request;
import io.nearstream.client.ProtocolCodec.ResponseFrame;
import io.nearstream.client.ProtocolCodec.StatsRequest;
import io.nearstream.client.ProtocolCodec.TimestampQuery;
import io.nearstream.client.ProtocolCodec.TxnAppendRequest;
import io.nearstream.client.ProtocolCodec.TxnInitRequest;
import io.nearstream.client.ProtocolCodec.TxnListRequest;
import io.nearstream.client.ProtocolCodec.TxnRefRequest;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.ScheduledFuture;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The Netty implementation of {@link NearstreamClient}: one TCP connection (NIO, {@code
 * TCP_NODELAY}), any number of requests in flight on it, matched to responses by request id.
 *
 * <p>Each request has a timeout (a long-poll fetch: its {@code maxWaitMs} plus the request
 * timeout); a timed-out request fails with {@link StatusCode#IO_ERROR} and its late response is
 * dropped. When the connection breaks, every request in flight fails with {@link
 * StatusCode#IO_ERROR} and the next request opens a new connection. Fetch responses keep the
 * received frame and hand out views of it; close each {@link FetchResponse}. Appended chunks are
 * written from the caller's arrays without a copy: do not modify them until the future completes.
 *
 * <pre>{@code
 * try (NearstreamClient client = NettyNearstreamClient.connect("127.0.0.1:7420")) {
 *     client.createStream(StreamConfig.of("clicks", 4)).join();
 *     byte[] chunk = new ChunkBuilder().add(bytes).build(0, 0, System.currentTimeMillis());
 *     client.append("clicks", new int[] {0}, List.of(chunk)).join();
 *     try (FetchResponse r =
 *             client.fetch("clicks", 500, List.of(new FetchEntry(0, Position.EARLIEST, 1 << 20)))
 *                     .join()) {
 *         for (ChunkBlock block : r.results().get(0).blocks()) {
 *             ChunkCursor cursor = new ChunkCursor(block);
 *             while (cursor.nextChunk()) {
 *                 while (cursor.nextRecord()) {
 *                     process(cursor.copyRecord());
 *                 }
 *             }
 *         }
 *     }
 * }
 * }</pre>
 */
public final class NettyNearstreamClient implements NearstreamClient {

    /** Netty's switch for its allocator's JDK Flight Recorder events. */
    static final String NETTY_JFR_PROPERTY = "io.netty.jfr.enabled";

    static {
        // Netty's pooled allocators register a JDK Flight Recorder listener that the JDK keeps for
        // the JVM's lifetime; when Netty comes from a class loader that should go away (a Flink
        // job jar bundling this client), that listener keeps the whole class loader, its
        // metaspace and the JNI library it loaded, one per job. So Netty's allocator events are
        // off unless the user asked for them; this must run before Netty initializes in this
        // class loader, which every connection of the client does through this class.
        if (System.getProperty(NETTY_JFR_PROPERTY) == null) {
            System.setProperty(NETTY_JFR_PROPERTY, "false");
        }
    }

    private final String address;
    private final String host;
    private final int port;
    private final NearstreamClientOptions options;
    private final EventLoopGroup group;
    private final boolean ownsGroup;
    private final Bootstrap bootstrap;
    private final AtomicLong nextRequestId = new AtomicLong(1);
    private final Object lock = new Object();

    // Guarded by lock.
    private Connection connection;
    private CompletableFuture<Connection> connecting;
    private boolean closed;

    /** The broker's frame limit from the last handshake; requests above it fail locally. */
    private volatile long brokerMaxFrameBytes = -1;

    private NettyNearstreamClient(String hostPort, NearstreamClientOptions options) {
        this.options = Objects.requireNonNull(options, "options");
        this.address = Objects.requireNonNull(hostPort, "hostPort");
        HostPort parsed = HostPort.parse(hostPort);
        this.host = parsed.host();
        this.port = parsed.port();
        if (options.eventLoopGroup() != null) {
            this.group = options.eventLoopGroup();
            this.ownsGroup = false;
        } else {
            this.group = newEventLoopGroup(options.eventLoopThreads(), "nearstream-client");
            this.ownsGroup = true;
        }
        int maxFrame = (int) Math.min(Integer.MAX_VALUE, (long) options.maxFrameBytes() + 4);
        this.bootstrap =
                new Bootstrap()
                        .group(group)
                        .channel(NioSocketChannel.class)
                        .option(ChannelOption.TCP_NODELAY, true)
                        .option(ChannelOption.SO_KEEPALIVE, true)
                        .option(
                                ChannelOption.CONNECT_TIMEOUT_MILLIS,
                                (int) options.connectTimeout().toMillis())
                        .handler(
                                new ChannelInitializer<SocketChannel>() {
                                    @Override
                                    protected void initChannel(SocketChannel ch) {
                                        ch.pipeline()
                                                .addLast(
                                                        "frames",
                                                        new LengthFieldBasedFrameDecoder(
                                                                ByteOrder.LITTLE_ENDIAN,
                                                                maxFrame,
                                                                0,
                                                                4,
                                                                0,
                                                                0,
                                                                true));
                                    }
                                });
    }

    /**
     * An event loop group of daemon threads for clients; made here so that this class's static
     * initializer (Netty's JFR switch) has run before Netty does.
     */
    static EventLoopGroup newEventLoopGroup(int threads, String threadName) {
        return new MultiThreadIoEventLoopGroup(
                threads, new DefaultThreadFactory(threadName, true), NioIoHandler.newFactory());
    }

    /** Shuts a group down, waiting for it unless called from one of its own threads. */
    static void shutDown(EventLoopGroup group) {
        io.netty.util.concurrent.Future<?> f = group.shutdownGracefully(0, 2, TimeUnit.SECONDS);
        if (!group.next().inEventLoop()) {
            f.awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
    }

    /** A broker address, {@code HOST:PORT} (an IPv6 host in brackets). */
    record HostPort(String host, int port) {

        /**
         * Parses {@code HOST:PORT}.
         *
         * @throws IllegalArgumentException when it is not one
         */
        static HostPort parse(String hostPort) {
            int colon = hostPort.lastIndexOf(':');
            if (colon <= 0 || colon == hostPort.length() - 1) {
                throw new IllegalArgumentException("address must be HOST:PORT, got " + hostPort);
            }
            String h = hostPort.substring(0, colon);
            if (h.startsWith("[") && h.endsWith("]")) {
                h = h.substring(1, h.length() - 1);
            }
            int p;
            try {
                p = Integer.parseInt(hostPort.substring(colon + 1));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("address must be HOST:PORT, got " + hostPort, e);
            }
            if (p < 1 || p > 65535) {
                throw new IllegalArgumentException("port out of range in " + hostPort);
            }
            return new HostPort(h, p);
        }
    }

    /**
     * A client that connects on its first request instead of now: the cluster client opens one per
     * broker from I/O callbacks, where waiting for a connection must not happen.
     */
    static NettyNearstreamClient open(String hostPort, NearstreamClientOptions options) {
        return new NettyNearstreamClient(hostPort, options);
    }

    /** Connects with {@link NearstreamClientOptions#DEFAULTS}. */
    public static NettyNearstreamClient connect(String hostPort) {
        return connect(hostPort, NearstreamClientOptions.DEFAULTS);
    }

    /**
     * Opens the connection and waits for it (up to the connect timeout).
     *
     * @throws NearstreamClientException with {@link StatusCode#IO_ERROR} when the broker cannot be
     *     reached
     */
    public static NettyNearstreamClient connect(String hostPort, NearstreamClientOptions options) {
        NettyNearstreamClient client = new NettyNearstreamClient(hostPort, options);
        try {
            client.connection()
                    .get(options.connectTimeout().toMillis() + 5_000, TimeUnit.MILLISECONDS);
            return client;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            client.close();
            throw new NearstreamClientException(
                    StatusCode.IO_ERROR, "interrupted while connecting to " + hostPort, e);
        } catch (ExecutionException | TimeoutException e) {
            client.close();
            Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
            if (cause instanceof NearstreamClientException nce) {
                throw new NearstreamClientException(nce.status(), nce.reason(), nce);
            }
            throw new NearstreamClientException(
                    StatusCode.IO_ERROR, "cannot connect to " + hostPort + ": " + cause, cause);
        }
    }

    @Override
    public String address() {
        return address;
    }

    /** The settings this client runs with. */
    public NearstreamClientOptions options() {
        return options;
    }

    /** Whether a connection is open now (a new one is opened by the next request otherwise). */
    public boolean isConnected() {
        synchronized (lock) {
            return connection != null && connection.channel.isActive();
        }
    }

    // ---- API --------------------------------------------------------------------------------

    @Override
    public CompletableFuture<Long> handshake(String clientName) {
        return call(
                new HandshakeRequest(ProtocolCodec.VERSION, ProtocolCodec.VERSION, clientName),
                defaultTimeoutMs(),
                (body, frame) -> {
                    HandshakeResponse r = ProtocolCodec.decodeHandshakeResponse(body);
                    brokerMaxFrameBytes = r.maxFrameBytes();
                    return r.brokerEpoch();
                });
    }

    @Override
    public CompletableFuture<Void> createStream(StreamConfig config) {
        Objects.requireNonNull(config, "config");
        return call(
                new CreateStreamRequest(config),
                defaultTimeoutMs(),
                (body, frame) -> {
                    ProtocolCodec.decodeEmpty(body, "CreateStream response");
                    return null;
                });
    }

    @Override
    public CompletableFuture<Void> deleteStream(String name) {
        return call(
                new DeleteStreamRequest(name),
                defaultTimeoutMs(),
                (body, frame) -> {
                    ProtocolCodec.decodeEmpty(body, "DeleteStream response");
                    return null;
                });
    }

    @Override
    public CompletableFuture<StreamConfig> describeStream(String name) {
        return call(
                new DescribeStreamRequest(name),
                defaultTimeoutMs(),
                (body, frame) -> ProtocolCodec.decodeDescribeStreamResponse(body));
    }

    @Override
    public CompletableFuture<List<String>> listStreams() {
        return call(
                new ListStreamsRequest(),
                defaultTimeoutMs(),
                (body, frame) -> ProtocolCodec.decodeListStreamsResponse(body));
    }

    @Override
    public CompletableFuture<List<StreamletMetadata>> metadata(String stream, int... streamlets) {
        return call(
                new MetadataRequest(stream, streamlets == null ? new int[0] : streamlets.clone()),
                defaultTimeoutMs(),
                (body, frame) -> ProtocolCodec.decodeMetadataResponse(body));
    }

    @Override
    public CompletableFuture<List<AppendResult>> append(
            String stream, int[] streamlets, List<byte[]> chunks) {
        if (streamlets.length != chunks.size()) {
            return mismatch(streamlets, chunks);
        }
        return call(
                new AppendRequest(stream, appendEntries(streamlets, chunks)),
                defaultTimeoutMs(),
                (body, frame) -> ProtocolCodec.decodeAppendResponse(body));
    }

    private static <T> CompletableFuture<T> mismatch(int[] streamlets, List<byte[]> chunks) {
        return CompletableFuture.failedFuture(
                new IllegalArgumentException(
                        streamlets.length
                                + " streamlets but "
                                + chunks.size()
                                + " chunks: one chunk per streamlet entry"));
    }

    private static List<AppendEntry> appendEntries(int[] streamlets, List<byte[]> chunks) {
        List<AppendEntry> entries = new ArrayList<>(chunks.size());
        for (int i = 0; i < streamlets.length; i++) {
            // wrappedBuffer shares the array: the frame is written from it without a copy.
            entries.add(new AppendEntry(streamlets[i], Unpooled.wrappedBuffer(chunks.get(i))));
        }
        return entries;
    }

    @Override
    public CompletableFuture<FetchResponse> fetch(
            String stream, int maxWaitMs, List<FetchEntry> entries) {
        return fetch(stream, maxWaitMs, entries, false);
    }

    @Override
    public CompletableFuture<FetchResponse> fetch(
            String stream, int maxWaitMs, List<FetchEntry> entries, boolean replicaRead) {
        if (maxWaitMs < 0) {
            return CompletableFuture.failedFuture(
                    new IllegalArgumentException("maxWaitMs must be >= 0, got " + maxWaitMs));
        }
        return call(
                new FetchRequest(stream, maxWaitMs, List.copyOf(entries), replicaRead),
                maxWaitMs + defaultTimeoutMs(),
                (body, frame) -> {
                    List<StreamletFetch> results = ProtocolCodec.decodeFetchResponse(body);
                    // The blocks are views of the frame: keep it until the response is closed.
                    return new NettyFetchResponse(results, frame.retain());
                });
    }

    @Override
    public CompletableFuture<List<TimestampLookup>> lookupTimestamps(
            String stream, Map<Integer, Long> timestampsByStreamlet) {
        List<TimestampQuery> queries = new ArrayList<>(timestampsByStreamlet.size());
        timestampsByStreamlet.forEach((s, ts) -> queries.add(new TimestampQuery(s, ts)));
        return call(
                new LookupTimestampRequest(stream, queries),
                defaultTimeoutMs(),
                (body, frame) -> ProtocolCodec.decodeLookupTimestampResponse(body));
    }

    @Override
    public CompletableFuture<ClusterMetadata> clusterMetadata(String... streams) {
        return call(
                new ClusterMetadataRequest(streams == null ? List.of() : List.of(streams)),
                defaultTimeoutMs(),
                (body, frame) -> ProtocolCodec.decodeClusterMetadataResponse(body));
    }

    @Override
    public CompletableFuture<Void> moveStreamlet(String stream, int streamlet) {
        // The broker answers only after it has copied every retained chunk of the streamlet from
        // its owner, which takes far longer than an ordinary request: wait ten request timeouts.
        return call(
                new MoveStreamletRequest(stream, streamlet),
                10 * defaultTimeoutMs(),
                (body, frame) -> {
                    ProtocolCodec.decodeEmpty(body, "MoveStreamlet response");
                    return null;
                });
    }

    @Override
    public CompletableFuture<Map<String, Long>> stats() {
        return call(
                new StatsRequest(),
                defaultTimeoutMs(),
                (body, frame) -> ProtocolCodec.decodeStatsResponse(body));
    }

    @Override
    public CompletableFuture<PushSubscription> pushSubscribe(
            String stream, List<PushRingSpec> rings, PushSubscribeOptions options) {
        return call(
                new PushSubscribeRequest(
                        stream,
                        options.slotsPerRing(),
                        options.slotBytes(),
                        options.consumerTimeoutMs(),
                        rings,
                        options.filter(),
                        options.slotFormat(),
                        options.replicaRead()),
                defaultTimeoutMs(),
                (body, frame) -> ProtocolCodec.decodePushSubscribeResponse(body));
    }

    @Override
    public CompletableFuture<Void> pushUpdate(long subscriptionId, List<PushRingSpec> rings) {
        return call(
                new PushUpdateRequest(subscriptionId, rings),
                defaultTimeoutMs(),
                (body, frame) -> {
                    ProtocolCodec.decodeEmpty(body, "PushUpdate response");
                    return null;
                });
    }

    @Override
    public CompletableFuture<Void> pushClose(long subscriptionId) {
        return call(
                new PushCloseRequest(subscriptionId),
                defaultTimeoutMs(),
                (body, frame) -> {
                    ProtocolCodec.decodeEmpty(body, "PushClose response");
                    return null;
                });
    }

    @Override
    public CompletableFuture<TxnInitResult> txnInit(
            String stream, String transactionalId, long keepPreparedThrough, int scope) {
        return call(
                new TxnInitRequest(stream, transactionalId, keepPreparedThrough, scope),
                defaultTimeoutMs(),
                (body, frame) -> ProtocolCodec.decodeTxnInitResponse(body));
    }

    @Override
    public CompletableFuture<TxnRef> txnBegin(TxnRef ref) {
        TxnRef begin = ref.withSerial(0); // the broker ignores it; the protocol says send 0
        return call(
                new TxnRefRequest(Opcode.TXN_BEGIN, begin),
                defaultTimeoutMs(),
                (body, frame) -> begin.withSerial(ProtocolCodec.decodeTxnBeginResponse(body)));
    }

    @Override
    public CompletableFuture<List<AppendResult>> txnAppend(
            TxnRef ref, int[] streamlets, List<byte[]> chunks) {
        if (streamlets.length != chunks.size()) {
            return mismatch(streamlets, chunks);
        }
        return call(
                new TxnAppendRequest(ref, appendEntries(streamlets, chunks)),
                defaultTimeoutMs(),
                (body, frame) -> ProtocolCodec.decodeAppendResponse(body, "TxnAppend response"));
    }

    @Override
    public CompletableFuture<Void> txnPrepare(TxnRef ref) {
        return txnRefCall(Opcode.TXN_PREPARE, ref);
    }

    @Override
    public CompletableFuture<Void> txnCommit(TxnRef ref) {
        return txnRefCall(Opcode.TXN_COMMIT, ref);
    }

    @Override
    public CompletableFuture<Void> txnAbort(TxnRef ref) {
        return txnRefCall(Opcode.TXN_ABORT, ref);
    }

    private CompletableFuture<Void> txnRefCall(Opcode opcode, TxnRef ref) {
        return call(
                new TxnRefRequest(opcode, ref),
                defaultTimeoutMs(),
                (body, frame) -> {
                    ProtocolCodec.decodeEmpty(body, opcode.wireName() + " response");
                    return null;
                });
    }

    @Override
    public CompletableFuture<List<TransactionInfo>> txnList(
            String stream, String idPrefix, int scope) {
        return call(
                new TxnListRequest(stream, idPrefix, scope),
                defaultTimeoutMs(),
                (body, frame) -> ProtocolCodec.decodeTxnListResponse(body));
    }

    @Override
    public void close() {
        Connection c;
        CompletableFuture<Connection> pendingConnect;
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            c = connection;
            connection = null;
            pendingConnect = connecting;
            connecting = null;
        }
        NearstreamClientException cause =
                new NearstreamClientException(StatusCode.IO_ERROR, "client closed");
        if (c != null) {
            c.fail(cause);
            c.channel.close();
        }
        if (pendingConnect != null) {
            pendingConnect.thenAccept(
                    late -> {
                        late.fail(cause);
                        late.channel.close();
                    });
        }
        if (ownsGroup) {
            shutDown(group);
        }
    }

    @Override
    public String toString() {
        return "NettyNearstreamClient[" + address + "]";
    }

    // ---- requests ---------------------------------------------------------------------------

    /** Turns an OK response body into the caller's value; {@code frame} is released afterwards. */
    @FunctionalInterface
    private interface BodyDecoder<T> {
        T decode(ByteBuf body, ByteBuf frame);
    }

    private long defaultTimeoutMs() {
        return options.requestTimeout().toMillis();
    }

    private <T> CompletableFuture<T> call(Request request, long timeoutMs, BodyDecoder<T> decoder) {
        CompletableFuture<T> future = new CompletableFuture<>();
        long id = nextRequestId.getAndIncrement();
        ByteBuf frame;
        try {
            frame = ProtocolCodec.encodeRequest(ByteBufAllocator.DEFAULT, id, request);
        } catch (IllegalArgumentException | NullPointerException e) {
            future.completeExceptionally(
                    new NearstreamClientException(
                            StatusCode.INVALID_ARGUMENT,
                            request.opcode().wireName() + " request: " + e.getMessage(),
                            e));
            return future;
        }
        long limit = brokerMaxFrameBytes;
        long length = frame.readableBytes() - ProtocolCodec.LENGTH_BYTES;
        if (limit > 0 && length > limit) {
            frame.release();
            future.completeExceptionally(
                    new NearstreamClientException(
                            StatusCode.FRAME_TOO_LARGE,
                            request.opcode().wireName()
                                    + " request of "
                                    + length
                                    + " bytes exceeds the broker's limit of "
                                    + limit));
            return future;
        }
        Pending<T> pending = new Pending<>(future, decoder, request.opcode());
        connection()
                .whenComplete(
                        (conn, err) -> {
                            if (err != null) {
                                frame.release();
                                future.completeExceptionally(ioError(err));
                            } else {
                                send(conn, id, pending, frame, timeoutMs);
                            }
                        });
        return future;
    }

    private <T> void send(
            Connection conn, long id, Pending<T> pending, ByteBuf frame, long timeoutMs) {
        conn.pending.put(id, pending);
        if (conn.broken) {
            // Lost the race with the connection's failure sweep: fail here instead.
            frame.release();
            if (conn.pending.remove(id, pending)) {
                pending.fail(conn.failure());
            }
            return;
        }
        Channel ch = conn.channel;
        try {
            pending.timeout =
                    ch.eventLoop()
                            .schedule(
                                    () -> {
                                        if (conn.pending.remove(id, pending)) {
                                            pending.fail(
                                                    new NearstreamClientException(
                                                            StatusCode.IO_ERROR,
                                                            pending.opcode.wireName()
                                                                    + " request timed out after "
                                                                    + timeoutMs
                                                                    + " ms (broker "
                                                                    + address
                                                                    + ")"));
                                        }
                                    },
                                    timeoutMs,
                                    TimeUnit.MILLISECONDS);
        } catch (RuntimeException e) {
            frame.release();
            if (conn.pending.remove(id, pending)) {
                pending.fail(ioError(e));
            }
            return;
        }
        ch.writeAndFlush(frame)
                .addListener(
                        (ChannelFuture f) -> {
                            if (!f.isSuccess() && conn.pending.remove(id, pending)) {
                                pending.cancelTimeout();
                                pending.fail(
                                        new NearstreamClientException(
                                                StatusCode.IO_ERROR,
                                                "cannot send to " + address + ": " + f.cause(),
                                                f.cause()));
                            }
                        });
    }

    private static NearstreamClientException ioError(Throwable t) {
        if (t instanceof java.util.concurrent.CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        if (t instanceof NearstreamClientException e) {
            return e;
        }
        return new NearstreamClientException(StatusCode.IO_ERROR, String.valueOf(t), t);
    }

    /** The open connection, or a new one (lazy reconnect). */
    private CompletableFuture<Connection> connection() {
        CompletableFuture<Connection> result;
        synchronized (lock) {
            if (closed) {
                return CompletableFuture.failedFuture(
                        new NearstreamClientException(StatusCode.IO_ERROR, "client closed"));
            }
            if (connection != null && !connection.broken) {
                return CompletableFuture.completedFuture(connection);
            }
            if (connecting != null) {
                return connecting;
            }
            result = new CompletableFuture<>();
            connecting = result;
        }
        ChannelFuture cf;
        try {
            cf = bootstrap.connect(host, port);
        } catch (RuntimeException e) {
            connectDone(result, null, e);
            return result;
        }
        cf.addListener(
                (ChannelFuture f) -> {
                    if (f.isSuccess()) {
                        Connection conn = new Connection(f.channel());
                        f.channel().pipeline().addLast("responses", conn);
                        connectDone(result, conn, null);
                    } else {
                        connectDone(result, null, f.cause());
                    }
                });
        return result;
    }

    private void connectDone(CompletableFuture<Connection> result, Connection conn, Throwable err) {
        boolean lateClose;
        synchronized (lock) {
            if (connecting == result) {
                connecting = null;
            }
            lateClose = closed;
            if (conn != null && !closed) {
                connection = conn;
            }
        }
        if (err != null) {
            result.completeExceptionally(
                    new NearstreamClientException(
                            StatusCode.IO_ERROR, "cannot connect to " + address + ": " + err, err));
        } else if (lateClose) {
            conn.channel.close();
            result.completeExceptionally(
                    new NearstreamClientException(StatusCode.IO_ERROR, "client closed"));
        } else {
            if (!conn.channel.isActive()) {
                conn.fail(
                        new NearstreamClientException(
                                StatusCode.IO_ERROR, "connection to " + address + " closed"));
            }
            result.complete(conn);
        }
    }

    /** One request waiting for its response. */
    private static final class Pending<T> {
        final CompletableFuture<T> future;
        final BodyDecoder<T> decoder;
        final Opcode opcode;
        volatile ScheduledFuture<?> timeout;

        Pending(CompletableFuture<T> future, BodyDecoder<T> decoder, Opcode opcode) {
            this.future = future;
            this.decoder = decoder;
            this.opcode = opcode;
        }

        void cancelTimeout() {
            ScheduledFuture<?> t = timeout;
            if (t != null) {
                t.cancel(false);
            }
        }

        void fail(Throwable t) {
            future.completeExceptionally(t);
        }

        /** Completes from a response; always releases {@code frame} (the decoder may retain it). */
        void complete(ResponseFrame response, ByteBuf frame) {
            try {
                if (response.header().opcode() != opcode.code()) {
                    fail(
                            NearstreamProtocolException.malformed(
                                    "response with opcode "
                                            + response.header().opcode()
                                            + " to a "
                                            + opcode.wireName()
                                            + " request"));
                } else if (!response.ok()) {
                    fail(new NearstreamClientException(response.statusCode(), response.message()));
                } else {
                    T value = decoder.decode(response.body(), frame);
                    if (!future.complete(value) && value instanceof AutoCloseable c) {
                        c.close(); // cancelled by the caller meanwhile
                    }
                }
            } catch (Exception e) {
                fail(e);
            } finally {
                frame.release();
            }
        }
    }

    /** One TCP connection and the requests in flight on it. */
    private final class Connection extends ChannelInboundHandlerAdapter {
        final Channel channel;
        final Map<Long, Pending<?>> pending = new ConcurrentHashMap<>();
        volatile boolean broken;
        volatile NearstreamClientException failure;
        private volatile Throwable lastError;

        Connection(Channel channel) {
            this.channel = channel;
        }

        NearstreamClientException failure() {
            NearstreamClientException f = failure;
            return f != null
                    ? f
                    : new NearstreamClientException(
                            StatusCode.IO_ERROR, "connection to " + address + " closed");
        }

        /** Marks the connection broken and fails everything in flight on it. */
        void fail(NearstreamClientException cause) {
            if (failure == null) {
                failure = cause;
            }
            broken = true;
            synchronized (lock) {
                if (connection == this) {
                    connection = null;
                }
            }
            for (Long id : pending.keySet()) {
                Pending<?> p = pending.remove(id);
                if (p != null) {
                    p.cancelTimeout();
                    p.fail(failure);
                }
            }
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf frame = (ByteBuf) msg;
            ResponseFrame response;
            try {
                response = ProtocolCodec.decodeResponse(frame);
            } catch (NearstreamProtocolException e) {
                frame.release();
                // The stream of frames can no longer be trusted.
                fail(
                        new NearstreamClientException(
                                StatusCode.IO_ERROR,
                                "bad frame from " + address + ": " + e.getMessage(),
                                e));
                ctx.close();
                return;
            }
            Pending<?> p = pending.remove(response.header().requestId());
            if (p == null) {
                frame.release(); // the request timed out; its answer comes too late
                return;
            }
            p.cancelTimeout();
            p.complete(response, frame);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            Throwable err = lastError;
            fail(
                    new NearstreamClientException(
                            StatusCode.IO_ERROR,
                            "connection to "
                                    + address
                                    + " closed"
                                    + (err != null ? ": " + err : ""),
                            err));
            ctx.fireChannelInactive();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            lastError = cause;
            ctx.close();
        }
    }
}
