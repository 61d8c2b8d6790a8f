package io.nearstream.client;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A TCP proxy in front of the broker that can lose a response: once {@link #dropNextResponse()} is
 * armed, the next bytes coming back from the broker are thrown away and the client's connection is
 * cut — the request was executed, its answer never arrives.
 */
final class DroppingProxy implements AutoCloseable {
    private final ServerSocket server;
    private final String brokerHost;
    private final int brokerPort;
    private final AtomicBoolean drop = new AtomicBoolean();
    private final AtomicInteger dropped = new AtomicInteger();
    private final Thread acceptor;
    private volatile boolean closed;

    DroppingProxy(String brokerHost, int brokerPort) throws IOException {
        this.brokerHost = brokerHost;
        this.brokerPort = brokerPort;
        this.server = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
        this.acceptor = new Thread(this::acceptLoop, "dropping-proxy");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    String address() {
        return "127.0.0.1:" + server.getLocalPort();
    }

    void dropNextResponse() {
        drop.set(true);
    }

    /** How many connections were cut with a response dropped. */
    int dropped() {
        return dropped.get();
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                Socket client = server.accept();
                Socket broker = new Socket(brokerHost, brokerPort);
                client.setTcpNoDelay(true);
                broker.setTcpNoDelay(true);
                start(() -> pump(client, broker, false));
                start(() -> pump(broker, client, true));
            } catch (IOException e) {
                return;
            }
        }
    }

    private static void start(Runnable r) {
        Thread t = new Thread(r, "dropping-proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    private void pump(Socket from, Socket to, boolean responses) {
        byte[] buf = new byte[64 * 1024];
        try (InputStream in = from.getInputStream();
                OutputStream out = to.getOutputStream()) {
            int n;
            while ((n = in.read(buf)) >= 0) {
                if (responses && drop.compareAndSet(true, false)) {
                    dropped.incrementAndGet();
                    break;
                }
                out.write(buf, 0, n);
                out.flush();
            }
        } catch (IOException e) {
            // One side closed; close both below.
        } finally {
            closeQuietly(from);
            closeQuietly(to);
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    @Override
    public void close() throws IOException {
        closed = true;
        server.close();
    }
}
