package io.nearstream.client;

import io.nearstream.client.ProtocolCodec.FrameHeader;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * A scripted broker for client unit tests: it reads request frames and lets a {@link Handler}
 * answer them (or not, or with garbage). One thread per connection.
 */
final class FakeBroker implements AutoCloseable {

    /** Answers one request; may write anything (or nothing) to {@code conn}. */
    interface Handler {
        void handle(FrameHeader header, ByteBuf frame, Conn conn) throws IOException;
    }

    /** One client connection. */
    static final class Conn {
        private final Socket socket;
        private final OutputStream out;

        Conn(Socket socket) throws IOException {
            this.socket = socket;
            this.out = socket.getOutputStream();
        }

        synchronized void write(byte[] bytes) throws IOException {
            out.write(bytes);
            out.flush();
        }

        /** Writes an OK (or error) response; {@code body} may be null. */
        void respond(FrameHeader h, int status, String message, Consumer<ByteBuf> body)
                throws IOException {
            ByteBuf frame =
                    ProtocolTestCodec.encodeResponse(
                            UnpooledByteBufAllocator.DEFAULT,
                            h.opcode(),
                            h.requestId(),
                            status,
                            message,
                            body);
            try {
                write(ByteBufUtil.getBytes(frame));
            } finally {
                frame.release();
            }
        }

        void close() throws IOException {
            socket.close();
        }
    }

    private final ServerSocket server;
    private final Handler handler;
    private final AtomicInteger accepted = new AtomicInteger();
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private volatile boolean closed;

    FakeBroker(Handler handler) throws IOException {
        this.handler = handler;
        this.server = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
        Thread t = new Thread(this::acceptLoop, "fake-broker");
        t.setDaemon(true);
        t.start();
    }

    String address() {
        return "127.0.0.1:" + server.getLocalPort();
    }

    int connectionsAccepted() {
        return accepted.get();
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                Socket s = server.accept();
                sockets.add(s);
                accepted.incrementAndGet();
                Thread t = new Thread(() -> serve(s), "fake-broker-conn");
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                return;
            }
        }
    }

    private void serve(Socket s) {
        try (DataInputStream in = new DataInputStream(s.getInputStream())) {
            Conn conn = new Conn(s);
            while (true) {
                int length = Integer.reverseBytes(in.readInt());
                byte[] frame = new byte[4 + length];
                frame[0] = (byte) length;
                frame[1] = (byte) (length >>> 8);
                frame[2] = (byte) (length >>> 16);
                frame[3] = (byte) (length >>> 24);
                in.readFully(frame, 4, length);
                ByteBuf buf = Unpooled.wrappedBuffer(frame);
                FrameHeader h = ProtocolCodec.readHeader(buf.duplicate());
                handler.handle(h, buf, conn);
            }
        } catch (EOFException e) {
            // client went away
        } catch (IOException e) {
            // connection closed by a test
        } finally {
            try {
                s.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
    }

    @Override
    public void close() throws IOException {
        closed = true;
        server.close();
        for (Socket s : sockets) {
            s.close();
        }
    }
}
