package io.nearstream.client;

import java.util.Objects;

/**
 * One broker of a cluster, as ClusterMetadata lists it (docs/protocol.md, "ClusterMetadata (11)").
 *
 * @param id the broker's id ({@code nearstreamd --broker-id}), a {@code u32} held in an int
 * @param address {@code host:port} where clients reach it
 * @param host the machine it runs on: a reader uses push only for streamlets whose broker runs on
 *     its own host
 */
public record BrokerInfo(int id, String address, String host) {

    public BrokerInfo {
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(host, "host");
    }

    /** {@code broker <id> at <address>}, the form the broker's own messages use. */
    public String describe() {
        return "broker " + Integer.toUnsignedString(id) + " at " + address;
    }
}
