package io.nearstream.client;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import java.util.function.IntFunction;

/**
 * Where a transactional producer's requests go: to the one broker of a plain client, or to each
 * broker of a cluster client that stores a streamlet of the stream, every broker's part of a
 * transaction being its own broker transaction ({@link BrokerTxnRef}).
 */
abstract sealed class TxnBrokers {

    static TxnBrokers of(NearstreamClient client) {
        return client instanceof NearstreamClusterClient cluster
                ? new Cluster(cluster)
                : new One(client);
    }

    /** Whether every request goes to one broker ({@link BrokerTxnRef#ONLY_BROKER}). */
    boolean single() {
        return this instanceof One;
    }

    /** The brokers a transaction of {@code stream} may span, ascending. */
    abstract CompletableFuture<List<Integer>> brokersOf(String stream);

    /** Sends a request of {@code stream}'s transactions to {@code broker}. */
    abstract <T> CompletableFuture<T> on(
            String stream, int broker, Function<NearstreamClient, CompletableFuture<T>> op);

    /**
     * Appends chunks, each to the transaction {@code txnOnBroker} names (and may begin) on its
     * streamlet's broker.
     */
    abstract CompletableFuture<List<AppendResult>> txnAppend(
            String stream,
            IntFunction<CompletableFuture<TxnRef>> txnOnBroker,
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

        @Override
        CompletableFuture<List<Integer>> brokersOf(String stream) {
            return CompletableFuture.completedFuture(List.of(BrokerTxnRef.ONLY_BROKER));
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
            try {
                return op.apply(client);
            } catch (RuntimeException e) {
                return CompletableFuture.failedFuture(e);
            }
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
    }

    private static final class Cluster extends TxnBrokers {
        private final NearstreamClusterClient client;

        Cluster(NearstreamClusterClient client) {
            this.client = client;
        }

        @Override
        CompletableFuture<List<Integer>> brokersOf(String stream) {
            return client.brokersOf(stream);
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
        CompletableFuture<List<AppendResult>> txnAppend(
                String stream,
                IntFunction<CompletableFuture<TxnRef>> txnOnBroker,
                int[] streamlets,
                List<byte[]> chunks) {
            return client.txnAppend(stream, txnOnBroker, streamlets, chunks);
        }
    }
}
