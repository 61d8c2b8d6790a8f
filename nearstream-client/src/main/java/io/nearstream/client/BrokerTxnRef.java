package io.nearstream.client;

import java.util.Objects;

/**
 * One part of a transaction, each with its own epoch and serial; a committer commits every part. On
 * a stream without replication transactions are per broker (docs/protocol.md, "Cluster"): a
 * transaction over streamlets of several brokers is one broker-scope transaction on each. On a
 * replicated stream they are per streamlet ("Transaction scopes"): one transaction in each
 * streamlet's scope it wrote to, {@code ref().scope()} naming the streamlet, sent to whichever
 * broker leads the streamlet when the request is made, so that a part outlives its leader.
 *
 * @param broker for the broker scope, the broker's id ({@code nearstreamd --broker-id}, 0 to
 *     2<sup>31</sup>−1), or {@link #ONLY_BROKER} for the one broker of a client that talks to a
 *     single broker; for a streamlet scope, the streamlet's leader when the part was handed out,
 *     for messages only (requests follow the streamlet's current leader)
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

    /** Whether the part is a streamlet scope's (a replicated stream's), not a broker's. */
    public boolean inStreamletScope() {
        return ref.scope() != TxnRef.BROKER_SCOPE;
    }

    /**
     * What tells the parts of one transaction apart, and what a successor's {@code
     * keepPreparedThrough} is keyed by: the broker for the broker scope, the streamlet for a
     * streamlet scope (whose leader may change).
     */
    public int partKey() {
        return inStreamletScope() ? ref.scope() : broker;
    }

    /** {@code broker N}, {@code the broker} or {@code streamlet N's leader}, for messages. */
    public String describeBroker() {
        if (inStreamletScope()) {
            return "streamlet " + Integer.toUnsignedString(ref.scope()) + "'s leader";
        }
        return broker == ONLY_BROKER ? "the broker" : "broker " + broker;
    }

    @Override
    public String toString() {
        if (inStreamletScope()) {
            return ref + (broker == ONLY_BROKER ? "" : " (led by broker " + broker + ")");
        }
        return ref + (broker == ONLY_BROKER ? "" : " on broker " + broker);
    }
}
