package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.ProtocolCodec.FrameHeader;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The client's transport behaviour against a scripted {@link FakeBroker}. */
class NettyNearstreamClientTest {

    private static String describedName(ByteBuf frame) {
        ProtocolTestCodec.DecodedRequest d = ProtocolTestCodec.decodeRequest(frame.duplicate());
        return ((ProtocolCodec.DescribeStreamRequest) d.request()).name();
    }

    private static void answerDescribe(FrameHeader h, String name, FakeBroker.Conn conn)
            throws IOException {
        conn.respond(
                h, 0, "", out -> ProtocolCodec.writeStreamConfig(out, StreamConfig.of(name, 1)));
    }

    private static NearstreamClientException failure(CompletableFuture<?> f) throws Exception {
        try {
            f.get(10, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            assertThat(e.getCause()).isInstanceOf(NearstreamClientException.class);
            return (NearstreamClientException) e.getCause();
        }
        throw new AssertionError("expected a failure, got " + f.join());
    }

    @Test
    void responsesAreMatchedByRequestIdNotOrder() throws Exception {
        List<Object[]> held = new ArrayList<>();
        try (FakeBroker broker =
                        new FakeBroker(
                                (h, frame, conn) -> {
                                    synchronized (held) {
                                        held.add(new Object[] {h, describedName(frame)});
                                        if (held.size() == 3) {
                                            for (int i = 2; i >= 0; i--) {
                                                Object[] r = held.get(i);
                                                answerDescribe(
                                                        (FrameHeader) r[0], (String) r[1], conn);
                                            }
                                        }
                                    }
                                });
                NettyNearstreamClient client = NettyNearstreamClient.connect(broker.address())) {
            CompletableFuture<StreamConfig> a = client.describeStream("a");
            CompletableFuture<StreamConfig> b = client.describeStream("b");
            CompletableFuture<StreamConfig> c = client.describeStream("c");
            assertThat(a.get(5, TimeUnit.SECONDS).name()).isEqualTo("a");
            assertThat(b.get(5, TimeUnit.SECONDS).name()).isEqualTo("b");
            assertThat(c.get(5, TimeUnit.SECONDS).name()).isEqualTo("c");
        }
    }

    /**
     * A fetch carries the replica-read frame flag (0x04) only when asked for one; its frame is
     * otherwise the same byte for byte (request ids aside), so a reader with follower reads off
     * sends what it always sent.
     */
    @Test
    void aFetchIsAReplicaReadOnlyWhenAskedFor() throws Exception {
        List<byte[]> frames = new ArrayList<>();
        try (FakeBroker broker =
                        new FakeBroker(
                                (h, frame, conn) -> {
                                    synchronized (frames) {
                                        frames.add(ByteBufUtil.getBytes(frame));
                                    }
                                    conn.respond(h, 0, "", out -> out.writeIntLE(0));
                                });
                NettyNearstreamClient client = NettyNearstreamClient.connect(broker.address())) {
            List<FetchEntry> entries = List.of(new FetchEntry(3, new Position(1, 2, 64), 4096));
            client.fetch("s", 0, entries).get(5, TimeUnit.SECONDS).close();
            client.fetch("s", 0, entries, false).get(5, TimeUnit.SECONDS).close();
            client.fetch("s", 0, entries, true).get(5, TimeUnit.SECONDS).close();
        }
        assertThat(frames).hasSize(3);
        int flags = 4 + 1; // after the length prefix and the version
        assertThat(frames).extracting(f -> f[flags]).containsExactly((byte) 0, (byte) 0, (byte) 4);
        int requestId = flags + 1 + 2;
        for (byte[] f : frames) {
            f[flags] = 0;
            Arrays.fill(f, requestId, requestId + 8, (byte) 0);
        }
        assertThat(frames.get(1)).isEqualTo(frames.get(0));
        assertThat(frames.get(2)).isEqualTo(frames.get(0));
    }

    @Test
    void timedOutRequestFailsAndItsLateAnswerIsDropped() throws Exception {
        List<FrameHeader> slow = new ArrayList<>();
        try (FakeBroker broker =
                        new FakeBroker(
                                (h, frame, conn) -> {
                                    String name = describedName(frame);
                                    if (name.equals("slow")) {
                                        slow.add(h);
                                    } else {
                                        // Answer the slow one late, then this one.
                                        for (FrameHeader s : slow) {
                                            answerDescribe(s, "slow", conn);
                                        }
                                        answerDescribe(h, name, conn);
                                    }
                                });
                NettyNearstreamClient client =
                        NettyNearstreamClient.connect(
                                broker.address(),
                                NearstreamClientOptions.builder()
                                        .requestTimeout(Duration.ofMillis(200))
                                        .build())) {
            long t0 = System.nanoTime();
            NearstreamClientException e = failure(client.describeStream("slow"));
            assertThat(e.status()).isEqualTo(StatusCode.IO_ERROR);
            assertThat(e.isRetriable()).isTrue();
            assertThat(e.getMessage()).contains("timed out");
            assertThat((System.nanoTime() - t0) / 1_000_000).isBetween(150L, 5_000L);
            assertThat(client.describeStream("fast").get(5, TimeUnit.SECONDS).name())
                    .isEqualTo("fast");
            assertThat(broker.connectionsAccepted()).isEqualTo(1);
        }
    }

    @Test
    void garbageFromTheBrokerFailsInFlightRequestsAndReconnects() throws Exception {
        try (FakeBroker broker =
                        new FakeBroker(
                                (h, frame, conn) -> {
                                    if (describedName(frame).equals("garbage")) {
                                        conn.write(new byte[] {5, 0, 0, 0, 1, 1, 1, 1, 1});
                                    } else if (describedName(frame).equals("parked")) {
                                        // never answered
                                    } else {
                                        answerDescribe(h, "ok", conn);
                                    }
                                });
                NettyNearstreamClient client = NettyNearstreamClient.connect(broker.address())) {
            CompletableFuture<StreamConfig> parked = client.describeStream("parked");
            CompletableFuture<StreamConfig> garbage = client.describeStream("garbage");
            assertThat(failure(garbage).status()).isEqualTo(StatusCode.IO_ERROR);
            assertThat(failure(parked).status()).isEqualTo(StatusCode.IO_ERROR);
            assertThat(client.describeStream("x").get(5, TimeUnit.SECONDS).name()).isEqualTo("ok");
            assertThat(broker.connectionsAccepted()).isEqualTo(2);
        }
    }

    @Test
    void oversizeResponseFrameClosesTheConnection() throws Exception {
        try (FakeBroker broker =
                        new FakeBroker(
                                (h, frame, conn) ->
                                        conn.respond(
                                                h,
                                                0,
                                                "",
                                                out ->
                                                        ProtocolTestCodec.writeListStreamsResponse(
                                                                out, List.of("n".repeat(5000)))));
                NettyNearstreamClient client =
                        NettyNearstreamClient.connect(
                                broker.address(),
                                NearstreamClientOptions.builder().maxFrameBytes(2048).build())) {
            NearstreamClientException e = failure(client.listStreams());
            assertThat(e.status()).isEqualTo(StatusCode.IO_ERROR);
            assertThat(e.getMessage()).containsIgnoringCase("frame");
        }
    }

    @Test
    void malformedBodyFailsThatRequestOnly() throws Exception {
        try (FakeBroker broker =
                        new FakeBroker(
                                (h, frame, conn) -> {
                                    if (h.opcode() == Opcode.LIST_STREAMS.code()) {
                                        // count 3, one name: truncated
                                        conn.respond(
                                                h,
                                                0,
                                                "",
                                                out ->
                                                        out.writeIntLE(3)
                                                                .writeShortLE(1)
                                                                .writeByte('a'));
                                    } else {
                                        answerDescribe(h, "fine", conn);
                                    }
                                });
                NettyNearstreamClient client = NettyNearstreamClient.connect(broker.address())) {
            NearstreamClientException e = failure(client.listStreams());
            assertThat(e).isInstanceOf(NearstreamProtocolException.class);
            assertThat(e.status()).isEqualTo(StatusCode.MALFORMED_REQUEST);
            assertThat(e.getMessage()).contains("ListStreams response");
            assertThat(client.describeStream("x").get(5, TimeUnit.SECONDS).name())
                    .isEqualTo("fine");
            assertThat(broker.connectionsAccepted()).isEqualTo(1);
        }
    }

    @Test
    void brokerErrorStatusBecomesTheException() throws Exception {
        try (FakeBroker broker =
                        new FakeBroker(
                                (h, frame, conn) ->
                                        conn.respond(
                                                h, StatusCode.SHUTTING_DOWN.code(), "bye", null));
                NettyNearstreamClient client = NettyNearstreamClient.connect(broker.address())) {
            NearstreamClientException e = failure(client.stats());
            assertThat(e.status()).isEqualTo(StatusCode.SHUTTING_DOWN);
            assertThat(e.isRetriable()).isTrue();
            assertThat(e.getMessage()).contains("bye");
        }
    }

    @Test
    void connectionClosedByTheBrokerFailsInFlightWithIoError() throws Exception {
        try (FakeBroker broker = new FakeBroker((h, frame, conn) -> conn.close());
                NettyNearstreamClient client = NettyNearstreamClient.connect(broker.address())) {
            NearstreamClientException e = failure(client.listStreams());
            assertThat(e.status()).isEqualTo(StatusCode.IO_ERROR);
            assertThat(e.getMessage()).contains("closed");
        }
    }

    @Test
    void refusedConnectionThrowsIoError() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        String address = "127.0.0.1:" + port;
        assertThatThrownBy(() -> NettyNearstreamClient.connect(address))
                .isInstanceOf(NearstreamClientException.class)
                .hasMessageContaining("cannot connect")
                .satisfies(
                        e ->
                                assertThat(((NearstreamClientException) e).status())
                                        .isEqualTo(StatusCode.IO_ERROR));
        assertThatThrownBy(() -> NettyNearstreamClient.connect("no-port"))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void sharedEventLoopGroupOutlivesItsClients() throws Exception {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try (FakeBroker broker = new FakeBroker((h, frame, conn) -> answerDescribe(h, "s", conn))) {
            NearstreamClientOptions options =
                    NearstreamClientOptions.builder().eventLoopGroup(group).build();
            NettyNearstreamClient a = NettyNearstreamClient.connect(broker.address(), options);
            NettyNearstreamClient b = NettyNearstreamClient.connect(broker.address(), options);
            a.close();
            assertThat(group.isShuttingDown()).isFalse();
            assertThat(b.describeStream("s").get(5, TimeUnit.SECONDS).name()).isEqualTo("s");
            b.close();
            assertThat(failure(a.describeStream("s")).getMessage()).contains("closed");
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    @Test
    void appendArgumentMismatchFailsTheFuture() throws Exception {
        try (FakeBroker broker = new FakeBroker((h, frame, conn) -> {});
                NettyNearstreamClient client = NettyNearstreamClient.connect(broker.address())) {
            CompletableFuture<List<AppendResult>> f =
                    client.append("s", new int[] {0, 1}, List.of(new byte[0]));
            assertThatThrownBy(f::join).hasCauseInstanceOf(IllegalArgumentException.class);
        }
    }
}
