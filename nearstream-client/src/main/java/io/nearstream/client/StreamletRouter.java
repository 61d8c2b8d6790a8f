package io.nearstream.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.IntBinaryOperator;
import java.util.function.IntUnaryOperator;

/**
 * Sends a per-streamlet request (Append, TxnAppend, Fetch, LookupTimestamp, Metadata) of a cluster
 * client: splits its entries by owner broker, sends one request per owner in parallel and puts the
 * answers back in request order. Entries refused with NOT_OWNER or BROKER_UNAVAILABLE, entries of
 * an unregistered owner and (for reads) entries whose broker connection failed are sent again after
 * a refresh of the view, up to {@code maxAttempts} rounds in all; what still fails then carries its
 * status with a message naming the broker.
 */
final class StreamletRouter {

    /** What the router needs to know about one kind of per-streamlet request. */
    interface EntryCall<E, R> {

        int streamlet(E entry);

        /**
         * Sends {@code entries} to broker {@code info} over {@code broker}, its connection; the
         * answers come in entry order. (A TxnAppend names that broker's own transaction.)
         */
        CompletableFuture<List<R>> send(BrokerInfo info, NearstreamClient broker, List<E> entries);

        /**
         * {@link #send(BrokerInfo, NearstreamClient, List)}, where {@code replicaRead} says that
         * some of the entries go to a broker that is not their streamlet's leader ({@link
         * #broker}): a read a follower answers from its own copy. Only a call that sends entries to
         * followers ever gets true.
         */
        default CompletableFuture<List<R>> send(
                BrokerInfo info, NearstreamClient broker, List<E> entries, boolean replicaRead) {
            return send(info, broker, entries);
        }

        /**
         * The broker an entry of {@code streamlet}, led by {@code leader}, goes to: the leader,
         * except for a read that the caller wants from a follower's copy (docs/cluster.md,
         * "Follower reads").
         */
        default int broker(int streamlet, int leader) {
            return leader;
        }

        /**
         * {@code broker} did not serve {@code entry}: it refused it or could not be reached. The
         * entry is sent again after a refresh (where the call allows it); a call that sent it to a
         * follower sends it to the leader from now on.
         */
        default void notServedBy(BrokerInfo broker, E entry) {}

        /**
         * Whether results carry a status each (Append, Fetch, …); when not (Metadata), a failure
         * fails the whole request, as a broker fails a Metadata request whole.
         */
        boolean perEntryStatus();

        /**
         * A result carrying a failure. Only calls with {@link #perEntryStatus()} have one: without
         * it, a failure fails the request whole and this is never called.
         */
        default R failure(E entry, StatusCode status, String message) {
            throw new IllegalStateException(
                    "a whole-request call has no per-entry failure ("
                            + status
                            + ": "
                            + message
                            + ")");
        }

        /** The result's status: its own ({@link EntryStatus}), or OK for a whole-request call. */
        default StatusCode status(R result) {
            return result instanceof EntryStatus s ? s.status() : StatusCode.OK;
        }

        default String message(R result) {
            return result instanceof EntryStatus s ? s.message() : "";
        }

        /**
         * Whether entries whose connection failed may be sent again: true for reads. A write may
         * have been stored before the connection broke, and only an idempotent producer can tell,
         * so Append and TxnAppend entries get IO_ERROR instead.
         */
        boolean resendAfterIoError();

        /**
         * {@code failed}, a result with an error status that {@code broker} answered and that is
         * not sent again, as the caller gets it: by default unchanged. Append and TxnAppend entries
         * name the broker, so that an error of one entry of a request spread over the cluster says
         * where it came from (a broker's own message does not name it).
         */
        default R answeredBy(BrokerInfo broker, R failed) {
            return failed;
        }

        /** The answers to {@code sent} in its order; checks that one broker answered them all. */
        default List<R> match(BrokerInfo broker, List<E> sent, List<R> answered) {
            if (answered.size() != sent.size()) {
                throw new NearstreamProtocolException(
                        StatusCode.INTERNAL,
                        broker.describe()
                                + " answered "
                                + answered.size()
                                + " results for "
                                + sent.size()
                                + " entries");
            }
            return answered;
        }
    }

    /** Refreshes a client's view of the cluster. */
    interface Refresher {
        /**
         * Looks up the placement of a stream the view does not have; fails when no broker answers
         * (so that an unreachable cluster is not reported as a missing stream).
         */
        CompletableFuture<ClusterMetadata> lookUp(String stream);

        /**
         * Refreshes the placement of {@code stream} and the broker list; completes normally even
         * when no broker answers (the view stays as it was).
         *
         * @param afterRefusal a broker refused the view's placement: take the answer whatever its
         *     version
         */
        CompletableFuture<Void> refresh(String stream, boolean afterRefusal);

        /** A request to {@code broker} failed for its connection: ask other brokers first. */
        void connectionFailed(BrokerInfo broker);
    }

    /**
     * The entries of one request grouped by where they go; {@code replicaReads} holds the brokers
     * of {@code byBroker} that got an entry of a streamlet they do not lead.
     */
    record Split(
            Map<BrokerInfo, List<Integer>> byBroker,
            Map<Integer, List<Integer>> unregistered,
            List<Integer> outOfRange,
            Set<BrokerInfo> replicaReads) {}

    private final ClusterView view;
    private final BrokerConnections connections;
    private final Refresher refresher;
    private final int maxAttempts;
    private final long backoffMs;

    StreamletRouter(
            ClusterView view,
            BrokerConnections connections,
            Refresher refresher,
            int maxAttempts,
            Duration backoff) {
        if (maxAttempts < 1) {
            throw new IllegalArgumentException("maxAttempts must be >= 1, got " + maxAttempts);
        }
        this.view = view;
        this.connections = connections;
        this.refresher = refresher;
        this.maxAttempts = maxAttempts;
        this.backoffMs = backoff.toMillis();
    }

    /**
     * Groups the entries {@code indexes} by the broker that owns their streamlet: registered owners
     * (in order of first appearance), owners the view has no broker for, and streamlets the stream
     * does not have.
     */
    static Split split(
            StreamPlacement placement,
            ClusterView view,
            List<Integer> indexes,
            IntUnaryOperator streamletOf) {
        return split(placement, view, indexes, streamletOf, (streamlet, leader) -> leader);
    }

    /**
     * {@link #split(StreamPlacement, ClusterView, List, IntUnaryOperator)}, where {@code brokerOf}
     * (streamlet, leader) names the broker each streamlet's entries go to. A broker other than the
     * leader that the view does not list is no choice: those entries go to the leader.
     */
    static Split split(
            StreamPlacement placement,
            ClusterView view,
            List<Integer> indexes,
            IntUnaryOperator streamletOf,
            IntBinaryOperator brokerOf) {
        Map<BrokerInfo, List<Integer>> byBroker = new LinkedHashMap<>();
        Map<Integer, List<Integer>> unregistered = new LinkedHashMap<>();
        List<Integer> outOfRange = new ArrayList<>();
        Set<BrokerInfo> replicaReads = new HashSet<>();
        for (int i : indexes) {
            int streamlet = streamletOf.applyAsInt(i);
            if (!placement.hasStreamlet(streamlet)) {
                outOfRange.add(i);
                continue;
            }
            int owner = placement.owner(streamlet);
            int chosen = brokerOf.applyAsInt(streamlet, owner);
            BrokerInfo follower = chosen == owner ? null : view.broker(chosen).orElse(null);
            if (follower != null) {
                byBroker.computeIfAbsent(follower, o -> new ArrayList<>()).add(i);
                replicaReads.add(follower);
                continue;
            }
            BrokerInfo b = view.broker(owner).orElse(null);
            if (b == null) {
                unregistered.computeIfAbsent(owner, o -> new ArrayList<>()).add(i);
            } else {
                byBroker.computeIfAbsent(b, o -> new ArrayList<>()).add(i);
            }
        }
        return new Split(byBroker, unregistered, outOfRange, replicaReads);
    }

    /** Sends {@code entries} of {@code stream} to their owners; the results in entry order. */
    <E, R> CompletableFuture<List<R>> route(String stream, List<E> entries, EntryCall<E, R> call) {
        Job<E, R> job = new Job<>(stream, entries, call);
        List<Integer> all = new ArrayList<>(entries.size());
        for (int i = 0; i < entries.size(); i++) {
            all.add(i);
        }
        return round(job, all, 0).thenApply(v -> job.results());
    }

    /** The placement of {@code stream}, asked for when the view does not have it. */
    CompletableFuture<StreamPlacement> placement(String stream) {
        StreamPlacement p = view.placement(stream).orElse(null);
        if (p != null) {
            return CompletableFuture.completedFuture(p);
        }
        return refresher
                .lookUp(stream)
                .thenApply(
                        v ->
                                view.placement(stream)
                                        .orElseThrow(
                                                () ->
                                                        new NearstreamClientException(
                                                                StatusCode.STREAM_NOT_FOUND,
                                                                "stream '"
                                                                        + stream
                                                                        + "' does not exist")));
    }

    static String notRegistered(int brokerId) {
        return "broker " + Integer.toUnsignedString(brokerId) + " is not registered";
    }

    static String noSuchStreamlet(StreamPlacement p, int streamlet) {
        return "streamlet "
                + Integer.toUnsignedString(streamlet)
                + " of stream '"
                + p.name()
                + "' does not exist: it has "
                + p.streamlets()
                + " streamlets";
    }

    private <E, R> CompletableFuture<Void> round(
            Job<E, R> job, List<Integer> pending, int attempt) {
        return placement(job.stream)
                .thenCompose(
                        p -> {
                            Split split =
                                    split(
                                            p,
                                            view,
                                            pending,
                                            i -> job.call.streamlet(job.entries.get(i)),
                                            job.call::broker);
                            for (int i : split.outOfRange()) {
                                int s = job.call.streamlet(job.entries.get(i));
                                job.fail(i, StatusCode.STREAMLET_NOT_FOUND, noSuchStreamlet(p, s));
                            }
                            split.unregistered()
                                    .forEach(
                                            (owner, indexes) -> {
                                                for (int i : indexes) {
                                                    job.retry(
                                                            i,
                                                            StatusCode.BROKER_UNAVAILABLE,
                                                            notRegistered(owner));
                                                }
                                            });
                            List<CompletableFuture<Void>> parts = new ArrayList<>();
                            split.byBroker()
                                    .forEach(
                                            (b, indexes) ->
                                                    parts.add(
                                                            send(
                                                                    job,
                                                                    b,
                                                                    indexes,
                                                                    split.replicaReads()
                                                                            .contains(b))));
                            return CompletableFuture.allOf(
                                            parts.toArray(new CompletableFuture<?>[0]))
                                    .thenCompose(v -> next(job, attempt));
                        });
    }

    private <E, R> CompletableFuture<Void> send(
            Job<E, R> job, BrokerInfo b, List<Integer> indexes, boolean replicaRead) {
        List<E> sent = new ArrayList<>(indexes.size());
        for (int i : indexes) {
            sent.add(job.entries.get(i));
        }
        CompletableFuture<List<R>> answer;
        try {
            answer = job.call.send(b, connections.forBroker(b), sent, replicaRead);
        } catch (RuntimeException e) {
            answer = CompletableFuture.failedFuture(e);
        }
        return answer.handle(
                (results, err) -> {
                    if (err != null) {
                        partFailed(job, b, indexes, asClientException(err));
                        return null;
                    }
                    List<R> matched;
                    try {
                        matched = job.call.match(b, sent, results);
                    } catch (NearstreamClientException e) {
                        job.fatal(e);
                        return null;
                    }
                    for (int k = 0; k < indexes.size(); k++) {
                        R r = matched.get(k);
                        StatusCode status = job.call.status(r);
                        if (isRefusal(status)) {
                            job.call.notServedBy(b, sent.get(k));
                            job.retry(
                                    indexes.get(k),
                                    status,
                                    b.describe() + ": " + job.call.message(r));
                        } else if (status != StatusCode.OK) {
                            job.settle(indexes.get(k), job.call.answeredBy(b, r));
                        } else {
                            job.settle(indexes.get(k), r);
                        }
                    }
                    return null;
                });
    }

    /** A whole part failed: its connection broke, or its broker refused the request whole. */
    private <E, R> void partFailed(
            Job<E, R> job, BrokerInfo b, List<Integer> indexes, NearstreamClientException e) {
        String message = b.describe() + ": " + e.reason();
        StatusCode status = e.status();
        if (status == StatusCode.IO_ERROR || isRefusal(status)) {
            for (int i : indexes) {
                job.call.notServedBy(b, job.entries.get(i));
            }
        }
        if (status == StatusCode.IO_ERROR) {
            refresher.connectionFailed(b);
            if (!job.call.resendAfterIoError()) {
                // No resend (whose round would refresh): the broker may be gone for good.
                refresher.refresh(job.stream, false);
            }
            for (int i : indexes) {
                if (job.call.resendAfterIoError()) {
                    job.retry(i, status, message);
                } else {
                    job.fail(i, status, message);
                }
            }
        } else if (isRefusal(status)) {
            for (int i : indexes) {
                job.retry(i, status, message);
            }
        } else {
            if (status == StatusCode.STREAM_NOT_FOUND) {
                // Deleted (or deleted and created again): look it up afresh next time.
                view.forget(job.stream);
            }
            job.fatal(new NearstreamClientException(status, message, e));
        }
    }

    private <E, R> CompletableFuture<Void> next(Job<E, R> job, int attempt) {
        Job.Retries retries = job.takeRetries();
        NearstreamClientException fatal = job.fatal();
        if (fatal != null) {
            return CompletableFuture.failedFuture(fatal);
        }
        if (retries.indexes().isEmpty()) {
            return CompletableFuture.completedFuture(null);
        }
        if (attempt + 1 >= maxAttempts) {
            job.giveUp(retries.indexes());
            fatal = job.fatal();
            return fatal != null
                    ? CompletableFuture.failedFuture(fatal)
                    : CompletableFuture.completedFuture(null);
        }
        // NOT_OWNER names a registered owner: the refreshed view knows where to go at once. A
        // missing broker or a broken connection may take a moment to come back.
        long delayMs = retries.onlyNotOwner() ? 0 : backoffMs << attempt;
        return refresher
                .refresh(job.stream, true)
                .thenCompose(v -> delay(delayMs))
                .thenCompose(v -> round(job, retries.indexes(), attempt + 1));
    }

    private static CompletableFuture<Void> delay(long ms) {
        if (ms <= 0) {
            return CompletableFuture.completedFuture(null);
        }
        Executor later = CompletableFuture.delayedExecutor(ms, TimeUnit.MILLISECONDS);
        return CompletableFuture.runAsync(() -> {}, later);
    }

    /** The statuses by which a broker says "not here": the entry goes to another broker. */
    static boolean isRefusal(StatusCode status) {
        return status == StatusCode.NOT_OWNER || status == StatusCode.BROKER_UNAVAILABLE;
    }

    static NearstreamClientException asClientException(Throwable t) {
        while (t instanceof CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        if (t instanceof NearstreamClientException e) {
            return e;
        }
        if (t instanceof IllegalArgumentException) {
            return new NearstreamClientException(StatusCode.INVALID_ARGUMENT, t.getMessage(), t);
        }
        return new NearstreamClientException(StatusCode.IO_ERROR, String.valueOf(t), t);
    }

    /** The state of one routed request across its rounds; every method is synchronized. */
    private static final class Job<E, R> {

        record Retries(List<Integer> indexes, boolean onlyNotOwner) {}

        final String stream;
        final List<E> entries;
        final EntryCall<E, R> call;
        private final Object[] results;
        private final StatusCode[] lastStatus;
        private final String[] lastMessage;
        private List<Integer> retries = new ArrayList<>();
        private boolean onlyNotOwner = true;
        private NearstreamClientException fatal;

        Job(String stream, List<E> entries, EntryCall<E, R> call) {
            this.stream = stream;
            this.entries = entries;
            this.call = call;
            this.results = new Object[entries.size()];
            this.lastStatus = new StatusCode[entries.size()];
            this.lastMessage = new String[entries.size()];
        }

        synchronized void settle(int i, R result) {
            results[i] = result;
        }

        /** Entry {@code i} fails for good: its own result, or the whole request's failure. */
        synchronized void fail(int i, StatusCode status, String message) {
            if (call.perEntryStatus()) {
                results[i] = call.failure(entries.get(i), status, message);
            } else {
                fatal(new NearstreamClientException(status, message));
            }
        }

        synchronized void retry(int i, StatusCode status, String message) {
            retries.add(i);
            lastStatus[i] = status;
            lastMessage[i] = message;
            if (status != StatusCode.NOT_OWNER) {
                onlyNotOwner = false;
            }
        }

        synchronized void fatal(NearstreamClientException e) {
            if (fatal == null) {
                fatal = e;
            }
        }

        synchronized NearstreamClientException fatal() {
            return fatal;
        }

        synchronized Retries takeRetries() {
            Retries r = new Retries(retries, onlyNotOwner);
            retries = new ArrayList<>();
            onlyNotOwner = true;
            return r;
        }

        /** The entries still refused after the last round keep their last refusal. */
        synchronized void giveUp(List<Integer> indexes) {
            for (int i : indexes) {
                fail(i, lastStatus[i], lastMessage[i]);
            }
        }

        @SuppressWarnings("unchecked")
        synchronized List<R> results() {
            List<R> out = new ArrayList<>(results.length);
            for (Object r : results) {
                out.add((R) r);
            }
            return out;
        }
    }
}
