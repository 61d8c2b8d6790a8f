package io.nearstream.client;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import java.util.function.IntFunction;

/**
 * Where a transactional producer's requests go: to the one broker of a plain client, or, for a
 * cluster client, to each broker that stores a streamlet of the stream (every broker's part of a
 * transaction being its own broker transaction, {@link BrokerTxnRef}), or on a replicated stream to
 * each streamlet's current leader (every streamlet's part being a transaction in its own scope).
 */
abstract sealed class TxnBrokers {

    /**
     * The parts a transaction of a stream may have.
     *
     * @param streamletScopes whether the parts are streamlet scopes (a replicated stream) rather
     *     than brokers
     * @param keys the parts' {@link BrokerTxnRef#partKey() keys}, ascending: broker ids, or
     *     streamlets
     */
    record Parts(boolean streamletScopes, List<Integer> keys) {
        Parts {
            keys = List.copyOf(keys);
        }
    }

    static TxnBrokers of(NearstreamClient client) {
        return client instanceof NearstreamClusterClient cluster
                ? new Cluster(cluster)
                : new One(client);
    }

    /** Whether every request goes to one broker ({@link BrokerTxnRef#ONLY_BROKER}). */
    boolean single() {
        return this instanceof One;
    }

    /** The parts a transaction of {@code stream} may span. */
    abstract CompletableFuture<Parts> partsOf(String stream);

    /** Sends a request of {@code stream}'s broker-scope transactions to {@code broker}. */
    abstract <T> CompletableFuture<T> on(
            String stream, int broker, Function<NearstreamClient, CompletableFuture<T>> op);

    /**
     * Sends a request of {@code stream}'s streamlet scope {@code streamlet} to the streamlet's
     * current leader.
     */
    abstract <T> CompletableFuture<T> onStreamlet(
            String stream, int streamlet, Function<NearstreamClient, CompletableFuture<T>> op);

    /** Sends a request about {@code part} where its scope lives now. */
    final <T> CompletableFuture<T> onPart(
            BrokerTxnRef part, Function<NearstreamClient, CompletableFuture<T>> op) {
        String stream = part.ref().stream();
        return part.inStreamletScope()
                ? onStreamlet(stream, part.ref().scope(), op)
                : on(stream, part.broker(), op);
    }

    /**
     * The broker that leads {@code streamlet} as far as this client knows, or {@link
     * BrokerTxnRef#ONLY_BROKER}; for naming a streamlet part's broker.
     */
    abstract int leaderOf(String stream, int streamlet);

    /**
     * Appends chunks, each to the broker-scope transaction {@code txnOnBroker} names (and may
     * begin) on its streamlet's broker.
     */
    abstract CompletableFuture<List<AppendResult>> txnAppend(
            String stream,
            IntFunction<CompletableFuture<TxnRef>> txnOnBroker,
            int[] streamlets,
            List<byte[]> chunks);

    /**
     * Appends chunks, each to the transaction {@code txnOnStreamlet} names (and may begin) in its
     * streamlet's scope, on the streamlet's leader.
     */
    abstract CompletableFuture<List<AppendResult>> streamletTxnAppend(
            String stream,
            IntFunction<CompletableFuture<TxnRef>> txnOnStreamlet,
            int[] streamlets,
            List<byte[]> chunks);

    private static <T> CompletableFuture<T> wrongBroker(String stream, String why) {
        return CompletableFuture.failedFuture(
                new NearstreamClientException(
                        StatusCode.INVALID_ARGUMENT,
                        "a transaction of stream '" + stream + "' on " + why));
    }

    private static final class One extends TxnBrokers {
        private final NearstreamClient client;

        One(NearstreamClient client) {
            this.client = client;
        }

        /**
         * Always the broker scope: a single broker is either standalone or one broker of a cluster
         * that cannot follow a replicated stream's leaders (which needs the bootstrap list).
         */
        @Override
        CompletableFuture<Parts> partsOf(String stream) {
            return CompletableFuture.completedFuture(
                    new Parts(false, List.of(BrokerTxnRef.ONLY_BROKER)));
        }

        @Override
        <T> CompletableFuture<T> on(
                String stream, int broker, Function<NearstreamClient, CompletableFuture<T>> op) {
            if (broker != BrokerTxnRef.ONLY_BROKER) {
                return wrongBroker(
                        stream,
                        "broker "
                                + broker
                                + " of a cluster cannot be reached through "
                                + client.address()
                                + ", a single broker: give the cluster's bootstrap list");
            }
            return apply(op);
        }

        /** The one broker: it answers NOT_OWNER when it does not lead the streamlet. */
        @Override
        <T> CompletableFuture<T> onStreamlet(
                String stream, int streamlet, Function<NearstreamClient, CompletableFuture<T>> op) {
            return apply(op);
        }

        private <T> CompletableFuture<T> apply(
                Function<NearstreamClient, CompletableFuture<T>> op) {
            try {
                return op.apply(client);
            } catch (RuntimeException e) {
                return CompletableFuture.failedFuture(e);
            }
        }

        @Override
        int leaderOf(String stream, int streamlet) {
            return BrokerTxnRef.ONLY_BROKER;
        }

        @Override
        CompletableFuture<List<AppendResult>> txnAppend(
                String stream,
                IntFunction<CompletableFuture<TxnRef>> txnOnBroker,
                int[] streamlets,
                List<byte[]> chunks) {
            return txnOnBroker
                    .apply(BrokerTxnRef.ONLY_BROKER)
                    .thenCompose(ref -> client.txnAppend(ref, streamlets, chunks));
        }

        @Override
        CompletableFuture<List<AppendResult>> streamletTxnAppend(
                String stream,
                IntFunction<CompletableFuture<TxnRef>> txnOnStreamlet,
                int[] streamlets,
                List<byte[]> chunks) {
            return wrongBroker(
                    stream,
                    "streamlet scopes cannot follow the streamlets' leaders through "
                            + client.address()
                            + ", a single broker: give the cluster's bootstrap list");
        }
    }

    private static final class Cluster extends TxnBrokers {
        private final NearstreamClusterClient client;

        Cluster(NearstreamClusterClient client) {
            this.client = client;
        }

        @Override
        CompletableFuture<Parts> partsOf(String stream) {
            return client.placementOf(stream)
                    .thenCompose(
                            p -> {
                                if (!p.replicated()) {
                                    return client.brokersOf(stream)
                                            .thenApply(brokers -> new Parts(false, brokers));
                                }
                                List<Integer> streamlets = new ArrayList<>(p.streamlets());
                                for (int s = 0; s < p.streamlets(); s++) {
                                    streamlets.add(s);
                                }
                                return CompletableFuture.completedFuture(
                                        new Parts(true, streamlets));
                            });
        }

        @Override
        <T> CompletableFuture<T> on(
                String stream, int broker, Function<NearstreamClient, CompletableFuture<T>> op) {
            if (broker == BrokerTxnRef.ONLY_BROKER) {
                return wrongBroker(
                        stream,
                        "the broker of a single-broker client cannot be told apart in the cluster"
                                + " at "
                                + client.address()
                                + ": it was begun through one broker's address");
            }
            return client.onBroker(stream, broker, op);
        }

        @Override
        <T> CompletableFuture<T> onStreamlet(
                String stream, int streamlet, Function<NearstreamClient, CompletableFuture<T>> op) {
            return client.onStreamlet(stream, streamlet, op);
        }

        @Override
        int leaderOf(String stream, int streamlet) {
            return client.leaderInView(stream, streamlet);
        }

        @Override
        CompletableFuture<List<AppendResult>> txnAppend(
                String stream,
                IntFunction<CompletableFuture<TxnRef>> txnOnBroker,
                int[] streamlets,
                List<byte[]> chunks) {
            return client.txnAppend(stream, txnOnBroker, streamlets, chunks);
        }

        @Override
        CompletableFuture<List<AppendResult>> streamletTxnAppend(
                String stream,
                IntFunction<CompletableFuture<TxnRef>> txnOnStreamlet,
                int[] streamlets,
                List<byte[]> chunks) {
            return client.streamletTxnAppend(stream, txnOnStreamlet, streamlets, chunks);
        }
    }
}
