package io.nearstream.client;

import java.util.Objects;

/**
 * One broker's part of a transaction. Transactions are per broker (docs/protocol.md, "Cluster"): a
 * transaction over streamlets of several brokers is one transaction on each, with its own epoch and
 * serial, and a committer commits every part.
 *
 * @param broker the broker's id ({@code nearstreamd --broker-id}, 0 to 2<sup>31</sup>−1), or {@link
 *     #ONLY_BROKER} for the one broker of a client that talks to a single broker
 */
public record BrokerTxnRef(int broker, TxnRef ref) {

    /** The broker of a single-broker client (a standalone broker, or a one-address bootstrap). */
    public static final int ONLY_BROKER = -1;

    public BrokerTxnRef {
        Objects.requireNonNull(ref, "ref");
        if (broker < ONLY_BROKER) {
            throw new IllegalArgumentException(
                    "broker must be a broker id (0 to 2147483647) or ONLY_BROKER, got " + broker);
        }
    }

    /** {@code broker N} or {@code the broker}, for messages. */
    public String describeBroker() {
        return broker == ONLY_BROKER ? "the broker" : "broker " + broker;
    }

    @Override
    public String toString() {
        return ref + (broker == ONLY_BROKER ? "" : " on broker " + broker);
    }
}
