package io.nearstream.client;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A {@link NearstreamClusterClient}'s connections: one client per broker id, opened on first use
 * and replaced when the broker is registered at another address than the one it was opened to (it
 * restarted elsewhere).
 */
final class BrokerConnections implements AutoCloseable {

    /**
     * Opens a client to one broker address. It must not wait for the connection: it is called from
     * I/O callbacks, so the connection is made by the client's first request.
     */
    @FunctionalInterface
    interface Factory {
        NearstreamClient open(String address);
    }

    /** An open client and the registered address it stands for. */
    private record Conn(String address, NearstreamClient client) {}

    private final Factory factory;

    // Guarded by this.
    private final Map<Integer, Conn> byId = new HashMap<>();
    private boolean closed;

    BrokerConnections(Factory factory) {
        this.factory = factory;
    }

    /** The client of broker {@code b}, opened now if there is none for its current address. */
    NearstreamClient forBroker(BrokerInfo b) {
        NearstreamClient stale = null;
        NearstreamClient client;
        synchronized (this) {
            checkOpen();
            Conn c = byId.get(b.id());
            if (c != null && c.address.equals(b.address())) {
                return c.client;
            }
            if (c != null) {
                stale = c.client;
            }
            client = factory.open(b.address());
            byId.put(b.id(), new Conn(b.address(), client));
        }
        if (stale != null) {
            stale.close();
        }
        return client;
    }

    /**
     * A client to an address whose broker id is not known yet (a bootstrap entry); {@link #adopt}
     * it once a ClusterMetadata answer names its broker, or close it.
     */
    NearstreamClient open(String address) {
        synchronized (this) {
            checkOpen();
        }
        return factory.open(address);
    }

    /**
     * Keeps {@code client}, opened to a bootstrap address, as broker {@code b}'s connection, so the
     * connection that found the cluster is not opened twice (the bootstrap address may be another
     * name for the registered one). When {@code b} already has one, {@code client} is closed.
     * Returns the client that now stands for {@code b}.
     */
    NearstreamClient adopt(BrokerInfo b, NearstreamClient client) {
        synchronized (this) {
            Conn c = byId.get(b.id());
            if (c == null && !closed) {
                byId.put(b.id(), new Conn(b.address(), client));
                return client;
            }
        }
        client.close();
        return forBroker(b);
    }

    private void checkOpen() {
        if (closed) {
            throw new NearstreamClientException(StatusCode.IO_ERROR, "client closed");
        }
    }

    @Override
    public void close() {
        List<Conn> all;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            all = new ArrayList<>(byId.values());
            byId.clear();
        }
        for (Conn c : all) {
            c.client.close();
        }
    }
}
