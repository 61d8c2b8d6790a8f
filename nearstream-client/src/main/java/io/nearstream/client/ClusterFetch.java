package io.nearstream.client;

import io.nearstream.client.StreamletRouter.EntryCall;
import io.nearstream.client.StreamletRouter.Split;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import javax.annotation.Nullable;

/**
 * Fetch for a cluster client: the entries go to their owners through the {@link StreamletRouter}
 * and the answers become one {@link MergedFetchResponse}.
 *
 * <p>A long poll over several brokers cannot simply wait for every broker's answer: a broker with
 * nothing new holds its part for the whole {@code maxWaitMs} while another has data, and a reader
 * would crawl. Nor can it answer when the first broker does and leave the others polling: a reader
 * fetching again at once would pile up polls on the idle brokers. So it is done in two steps: first
 * every broker is asked without waiting; when anything came back (data or an error) that is the
 * answer. Only when nothing did, every broker is asked to wait, and the first answer with data or
 * an error ends the fetch; the entries of brokers still waiting keep the empty answers of the first
 * step (valid answers: nothing at the position asked), and their late answers are released as they
 * come. Polls pile up only while nothing is found at once, so at most one per broker and fetch.
 *
 * <p>With {@link FollowerReads}, a streamlet's entries go to the broker it picks, with the
 * replica-read flag on the requests to brokers that do not lead every streamlet they are asked for;
 * an entry the follower does not serve is sent to the leader in the same fetch (the first step's
 * resend) or the next (a long poll's), and the streamlet stays there for a while.
 */
final class ClusterFetch {

    private final StreamletRouter router;
    private final ClusterView view;
    private final BrokerConnections connections;
    private final StreamletRouter.Refresher refresher;

    ClusterFetch(
            StreamletRouter router,
            ClusterView view,
            BrokerConnections connections,
            StreamletRouter.Refresher refresher) {
        this.router = router;
        this.view = view;
        this.connections = connections;
        this.refresher = refresher;
    }

    /**
     * @param reads the broker each streamlet is read from; null: every streamlet from its leader
     */
    CompletableFuture<FetchResponse> fetch(
            String stream, int maxWaitMs, List<FetchEntry> entries, @Nullable FollowerReads reads) {
        if (maxWaitMs == 0) {
            return round(stream, 0, entries, reads);
        }
        return router.placement(stream)
                .thenCompose(
                        placement -> {
                            if (brokers(placement, entries, reads).size() <= 1) {
                                // One broker: it long-polls by itself.
                                return round(stream, maxWaitMs, entries, reads);
                            }
                            return round(stream, 0, entries, reads)
                                    .thenCompose(
                                            first -> {
                                                if (hasNews(first.results())) {
                                                    return CompletableFuture.completedFuture(first);
                                                }
                                                // No blocks: nothing refers to its frames.
                                                List<StreamletFetch> empty = first.results();
                                                first.close();
                                                return longPoll(
                                                        stream, maxWaitMs, entries, empty, reads);
                                            });
                        });
    }

    /** The brokers the entries go to. */
    private static Set<Integer> brokers(
            StreamPlacement placement, List<FetchEntry> entries, @Nullable FollowerReads reads) {
        Set<Integer> brokers = new HashSet<>();
        for (FetchEntry e : entries) {
            if (placement.hasStreamlet(e.streamlet())) {
                int leader = placement.owner(e.streamlet());
                brokers.add(reads == null ? leader : reads.broker(e.streamlet(), leader));
            }
        }
        return brokers;
    }

    /** Whether any entry brought data or an error, which ends a long poll. */
    private static boolean hasNews(List<StreamletFetch> results) {
        for (StreamletFetch r : results) {
            if (!r.ok() || !r.blocks().isEmpty()) {
                return true;
            }
        }
        return false;
    }

    /** One routed fetch; every broker's answer is awaited. */
    private CompletableFuture<FetchResponse> round(
            String stream, int maxWaitMs, List<FetchEntry> entries, @Nullable FollowerReads reads) {
        FetchCall call = new FetchCall(stream, maxWaitMs, reads);
        CompletableFuture<FetchResponse> result = new CompletableFuture<>();
        router.route(stream, entries, call)
                .whenComplete(
                        (results, err) -> {
                            List<FetchResponse> parts = call.takeParts();
                            if (err != null) {
                                MergedFetchResponse.closeAll(parts);
                                result.completeExceptionally(unwrap(err));
                                return;
                            }
                            MergedFetchResponse merged = new MergedFetchResponse(results, parts);
                            if (!result.complete(merged)) {
                                merged.close(); // cancelled by the caller meanwhile
                            }
                        });
        return result;
    }

    private static Throwable unwrap(Throwable t) {
        return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    }

    /** The second step: every broker waits; the first answer with news ends the fetch. */
    private CompletableFuture<FetchResponse> longPoll(
            String stream,
            int maxWaitMs,
            List<FetchEntry> entries,
            List<StreamletFetch> empty,
            @Nullable FollowerReads reads) {
        StreamPlacement placement = view.placement(stream).orElse(null);
        if (placement == null) {
            return CompletableFuture.completedFuture(new MergedFetchResponse(empty, List.of()));
        }
        List<Integer> all = new ArrayList<>(entries.size());
        for (int i = 0; i < entries.size(); i++) {
            all.add(i);
        }
        FetchCall call = new FetchCall(stream, maxWaitMs, reads);
        Split split =
                StreamletRouter.split(
                        placement, view, all, i -> entries.get(i).streamlet(), call::broker);
        LongPoll poll = new LongPoll(stream, entries, empty, split.byBroker().size(), call);
        if (split.byBroker().isEmpty()) {
            return CompletableFuture.completedFuture(new MergedFetchResponse(empty, List.of()));
        }
        split.byBroker()
                .forEach(
                        (b, indexes) -> {
                            List<FetchEntry> sent = new ArrayList<>(indexes.size());
                            for (int i : indexes) {
                                sent.add(entries.get(i));
                            }
                            CompletableFuture<FetchResponse> part;
                            try {
                                part =
                                        connections
                                                .forBroker(b)
                                                .fetch(
                                                        stream,
                                                        maxWaitMs,
                                                        sent,
                                                        split.replicaReads().contains(b));
                            } catch (RuntimeException e) {
                                part = CompletableFuture.failedFuture(e);
                            }
                            part.whenComplete((r, err) -> poll.answered(b, indexes, r, err));
                        });
        return poll.result;
    }

    /** The brokers' answers to the second step, until the first with news. */
    private final class LongPoll {
        final CompletableFuture<FetchResponse> result = new CompletableFuture<>();
        private final String stream;
        private final List<FetchEntry> entries;
        private final FetchCall call;
        private final List<StreamletFetch> results;
        private final List<FetchResponse> kept = new ArrayList<>();
        private int waiting;
        private boolean done;

        LongPoll(
                String stream,
                List<FetchEntry> entries,
                List<StreamletFetch> empty,
                int waiting,
                FetchCall call) {
            this.stream = stream;
            this.entries = entries;
            this.call = call;
            this.results = new ArrayList<>(empty);
            this.waiting = waiting;
        }

        void answered(BrokerInfo b, List<Integer> indexes, FetchResponse r, Throwable err) {
            boolean refused = false;
            MergedFetchResponse merged = null;
            synchronized (this) {
                if (done) {
                    if (r != null) {
                        r.close(); // late: the fetch was answered without it
                    }
                    return;
                }
                boolean news = false;
                if (err != null) {
                    StatusCode status = StreamletRouter.asClientException(err).status();
                    if (status == StatusCode.IO_ERROR) {
                        refresher.connectionFailed(b);
                    }
                    if (status == StatusCode.IO_ERROR || StreamletRouter.isRefusal(status)) {
                        for (int i : indexes) {
                            call.notServedBy(b, entries.get(i));
                        }
                    }
                    // Its entries keep the first step's answers; the next fetch tells.
                } else if (r.results().size() != indexes.size()) {
                    r.close();
                } else {
                    kept.add(r);
                    for (int k = 0; k < indexes.size(); k++) {
                        StreamletFetch f = r.results().get(k);
                        if (StreamletRouter.isRefusal(f.status())) {
                            // The next fetch goes to the new owner, or from a follower that
                            // does not serve the streamlet to its leader.
                            call.notServedBy(b, entries.get(indexes.get(k)));
                            refused = true;
                            continue;
                        }
                        results.set(indexes.get(k), f);
                        news |= !f.ok() || !f.blocks().isEmpty();
                    }
                }
                waiting--;
                if (news || waiting == 0) {
                    done = true;
                    merged =
                            new MergedFetchResponse(
                                    Collections.unmodifiableList(results), List.copyOf(kept));
                }
            }
            if (refused) {
                refresher.refresh(stream, true);
            }
            if (merged != null && !result.complete(merged)) {
                merged.close();
            }
        }
    }

    /**
     * Fetch entries for the router; keeps every part's response for the merged one. With {@link
     * FollowerReads}, each streamlet goes to the broker they pick.
     */
    private static final class FetchCall implements EntryCall<FetchEntry, StreamletFetch> {
        private final String stream;
        private final int maxWaitMs;
        @Nullable private final FollowerReads reads;
        private final List<FetchResponse> parts = new ArrayList<>();

        FetchCall(String stream, int maxWaitMs, @Nullable FollowerReads reads) {
            this.stream = stream;
            this.maxWaitMs = maxWaitMs;
            this.reads = reads;
        }

        synchronized List<FetchResponse> takeParts() {
            return new ArrayList<>(parts);
        }

        private synchronized void keep(FetchResponse r) {
            parts.add(r);
        }

        @Override
        public int streamlet(FetchEntry entry) {
            return entry.streamlet();
        }

        @Override
        public int broker(int streamlet, int leader) {
            return reads == null ? leader : reads.broker(streamlet, leader);
        }

        @Override
        public void notServedBy(BrokerInfo broker, FetchEntry entry) {
            if (reads != null) {
                reads.notServedBy(entry.streamlet(), broker.id());
            }
        }

        @Override
        public CompletableFuture<List<StreamletFetch>> send(
                BrokerInfo info, NearstreamClient broker, List<FetchEntry> entries) {
            return send(info, broker, entries, false);
        }

        @Override
        public CompletableFuture<List<StreamletFetch>> send(
                BrokerInfo info,
                NearstreamClient broker,
                List<FetchEntry> entries,
                boolean replicaRead) {
            return broker.fetch(stream, maxWaitMs, entries, replicaRead)
                    .thenApply(
                            r -> {
                                keep(r);
                                return r.results();
                            });
        }

        @Override
        public boolean perEntryStatus() {
            return true;
        }

        @Override
        public StreamletFetch failure(FetchEntry entry, StatusCode status, String message) {
            return new StreamletFetch(
                    entry.streamlet(),
                    status,
                    message,
                    entry.position(),
                    Position.EARLIEST,
                    List.of());
        }

        @Override
        public boolean resendAfterIoError() {
            return true;
        }
    }
}
