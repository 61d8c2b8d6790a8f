package io.nearstream.flink.common;

import static org.apache.flink.util.Preconditions.checkArgument;
import static org.apache.flink.util.Preconditions.checkNotNull;
import static org.apache.flink.util.Preconditions.checkState;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.apache.flink.annotation.Internal;

/**
 * The checks the source and sink builders share, so that a wrong broker address or stream name
 * fails when the job is built, with the same explanation for both, instead of restarting forever on
 * the broker's refusal.
 */
@Internal
public final class ConnectorChecks {

    /** Stream names as the broker accepts them (docs/protocol.md, Stream configuration). */
    private static final Pattern STREAM_NAME = Pattern.compile("[A-Za-z0-9_\\-][A-Za-z0-9._\\-]*");

    private static final int MAX_STREAM_NAME_BYTES = 200;

    private ConnectorChecks() {}

    /**
     * The brokers of {@code brokers} as one address for {@code NearstreamClient.connect}: a single
     * {@code host:port}, or a cluster's bootstrap list {@code host:port,host:port} (each element
     * may itself be a comma-separated list). Every address is trimmed and checked.
     */
    public static String brokers(String[] brokers) {
        checkState(
                brokers != null && brokers.length > 0,
                "No broker set: call setBrokers(\"host:port\") (or a cluster's \"host:port,...\")");
        List<String> addresses = new ArrayList<>();
        for (String element : brokers) {
            checkNotNull(element, "broker address is null");
            for (String address : element.split(",")) {
                String trimmed = address.trim();
                checkArgument(
                        isHostPort(trimmed),
                        "Broker address must be host:port with a port in 1..65535, got '%s'",
                        trimmed);
                addresses.add(trimmed);
            }
        }
        return String.join(",", addresses);
    }

    /**
     * Whether {@code brokers} (as {@link #brokers} returns it) names a cluster's bootstrap list.
     */
    public static boolean isCluster(String brokers) {
        return brokers.indexOf(',') >= 0;
    }

    /** Checks a stream name against the broker's rule and returns it. */
    public static String stream(String stream) {
        checkState(stream != null, "No stream set: call setStream(name)");
        int nameBytes = stream.getBytes(StandardCharsets.UTF_8).length;
        checkArgument(
                nameBytes >= 1 && nameBytes <= MAX_STREAM_NAME_BYTES,
                "Stream name must be 1 to %s bytes, got %s bytes",
                MAX_STREAM_NAME_BYTES,
                nameBytes);
        checkArgument(
                STREAM_NAME.matcher(stream).matches(),
                "Stream name '%s' is invalid: use [A-Za-z0-9._-] and do not start with '.'",
                stream);
        return stream;
    }

    private static boolean isHostPort(String address) {
        int colon = address.lastIndexOf(':');
        if (colon <= 0 || colon == address.length() - 1) {
            return false;
        }
        String host = address.substring(0, colon);
        if (host.contains(":") && !(host.startsWith("[") && host.endsWith("]"))) {
            return false; // IPv6 must be bracketed
        }
        try {
            int port = Integer.parseInt(address.substring(colon + 1));
            return port >= 1 && port <= 65535;
        } catch (NumberFormatException e) {
            return false;
        }
    }
}
