package io.nearstream.flink.source.enumerator;

import java.net.InetAddress;
import java.util.Collections;
import java.util.HashSet;
import java.util.Locale;
import java.util.Set;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;
import org.apache.flink.annotation.VisibleForTesting;

/**
 * Tells whether a source reader runs on the broker's host. A reader's location (the host of its
 * TaskManager, as Flink reports it) is local when it equals, ignoring case, the broker's host name
 * or one of the addresses that name resolves to. A broker on a loopback address is reachable from
 * its own machine only, so every reader counts as local to it.
 *
 * <p>{@link #resolve(String)} does DNS, so the enumerator calls it on its worker thread.
 */
@Internal
public final class BrokerLocality {

    private final Set<String> names;
    private final boolean loopback;

    @VisibleForTesting
    BrokerLocality(Set<String> names, boolean loopback) {
        this.names = Collections.unmodifiableSet(names);
        this.loopback = loopback;
    }

    /** The locality of the broker at {@code host:port} (the host may be a bracketed IPv6). */
    public static BrokerLocality resolve(String address) {
        String host = hostOf(address);
        Set<String> names = new HashSet<>();
        names.add(host.toLowerCase(Locale.ROOT));
        boolean loopback = false;
        try {
            for (InetAddress a : InetAddress.getAllByName(host)) {
                names.add(a.getHostAddress().toLowerCase(Locale.ROOT));
                loopback |= a.isLoopbackAddress();
            }
        } catch (Exception e) {
            // Unresolvable here: compare by name only.
        }
        return new BrokerLocality(names, loopback);
    }

    /**
     * The locality of a cluster's broker that reports running on {@code host} (its {@code --host},
     * docs/cluster.md): readers whose host is that name or one of its addresses; every reader when
     * it is a loopback name.
     */
    public static BrokerLocality ofHost(String host) {
        return resolve(
                host.contains(":") && !host.startsWith("[") ? "[" + host + "]:0" : host + ":0");
    }

    /** Whether a reader at {@code readerHost} is on the broker's machine. */
    public boolean isLocal(@Nullable String readerHost) {
        if (loopback) {
            return true;
        }
        return readerHost != null && names.contains(readerHost.toLowerCase(Locale.ROOT));
    }

    /** The host part of {@code host:port}. */
    public static String hostOf(String address) {
        int colon = address.lastIndexOf(':');
        String host = colon > 0 ? address.substring(0, colon) : address;
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        return host;
    }

    @Override
    public String toString() {
        return loopback ? "loopback" : names.toString();
    }
}
