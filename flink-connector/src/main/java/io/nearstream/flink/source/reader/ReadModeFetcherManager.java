package io.nearstream.flink.source.reader;

import io.nearstream.flink.source.split.NearstreamSplit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import java.util.function.ToIntFunction;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.source.reader.fetcher.SplitFetcher;
import org.apache.flink.connector.base.source.reader.fetcher.SplitFetcherManager;
import org.apache.flink.connector.base.source.reader.splitreader.SplitReader;

/**
 * One fetcher per read mode and push broker, for a reader that pushes some splits and pulls the
 * others (over a broker cluster: the streamlets of each broker on its host by push, from that
 * broker's subscription, the other brokers' by fetch RPCs; docs/flink-connector.md, "Over a broker
 * cluster"). Each split goes to the fetcher of its mode and broker, which owns it until it finishes
 * or is removed; a fetcher left without splits shuts down, as Flink's do, and a later split of its
 * kind starts a new one. Each keeps its own thread, so a push fetcher waiting on its ring never
 * delays the pulls, another broker's ring, or a long poll the pushed slots.
 */
@Internal
public final class ReadModeFetcherManager extends SplitFetcherManager<RecordRun, NearstreamSplit> {

    /** {@link #pushBrokerOf}'s answer for a split that is pulled. */
    public static final int PULLED = -1;

    private final ToIntFunction<NearstreamSplit> pushBrokerOf;
    private final IntFunction<Supplier<SplitReader<RecordRun, NearstreamSplit>>> pushReaders;
    private final Supplier<SplitReader<RecordRun, NearstreamSplit>> pullReaders;

    /** What the next {@link #createSplitFetcher()} builds; set under this object's lock. */
    private Supplier<SplitReader<RecordRun, NearstreamSplit>> next;

    /** The running fetcher of each push broker, and of pulls ({@link #PULLED}), by id. */
    private final Map<Integer, Integer> fetcherOf = new HashMap<>();

    /**
     * @param pushBrokerOf the broker a split is pushed from, or {@link #PULLED}
     * @param pushReaders the split readers of one broker's push fetcher
     */
    public ReadModeFetcherManager(
            ToIntFunction<NearstreamSplit> pushBrokerOf,
            IntFunction<Supplier<SplitReader<RecordRun, NearstreamSplit>>> pushReaders,
            Supplier<SplitReader<RecordRun, NearstreamSplit>> pullReaders,
            Configuration config) {
        this(new Holder(), pushBrokerOf, pushReaders, pullReaders, config);
    }

    // The base class takes its one supplier at construction: it reads `next` through a holder
    // filled once this object exists.
    private ReadModeFetcherManager(
            Holder holder,
            ToIntFunction<NearstreamSplit> pushBrokerOf,
            IntFunction<Supplier<SplitReader<RecordRun, NearstreamSplit>>> pushReaders,
            Supplier<SplitReader<RecordRun, NearstreamSplit>> pullReaders,
            Configuration config) {
        super(() -> holder.manager.next.get(), config);
        holder.manager = this;
        this.pushBrokerOf = pushBrokerOf;
        this.pushReaders = pushReaders;
        this.pullReaders = pullReaders;
    }

    private static final class Holder {
        ReadModeFetcherManager manager;
    }

    /** The splits by the fetcher they go to: push broker, or {@link #PULLED}. */
    private Map<Integer, List<NearstreamSplit>> byFetcher(List<NearstreamSplit> splits) {
        Map<Integer, List<NearstreamSplit>> by = new TreeMap<>();
        for (NearstreamSplit split : splits) {
            by.computeIfAbsent(pushBrokerOf.applyAsInt(split), k -> new ArrayList<>()).add(split);
        }
        return by;
    }

    @Override
    public synchronized void addSplits(List<NearstreamSplit> splits) {
        byFetcher(splits)
                .forEach(
                        (kind, part) -> {
                            SplitFetcher<RecordRun, NearstreamSplit> fetcher = running(kind);
                            if (fetcher != null) {
                                fetcher.addSplits(part);
                                return;
                            }
                            next = kind == PULLED ? pullReaders : pushReaders.apply(kind);
                            fetcher = createSplitFetcher();
                            fetcher.addSplits(part);
                            startFetcher(fetcher);
                            fetcherOf.put(kind, fetcher.fetcherId());
                        });
    }

    @Override
    public synchronized void removeSplits(List<NearstreamSplit> splits) {
        byFetcher(splits)
                .forEach(
                        (kind, part) -> {
                            SplitFetcher<RecordRun, NearstreamSplit> fetcher = running(kind);
                            if (fetcher != null) {
                                fetcher.removeSplits(part);
                            }
                        });
    }

    @Nullable
    private SplitFetcher<RecordRun, NearstreamSplit> running(int kind) {
        Integer id = fetcherOf.get(kind);
        return id == null ? null : fetchers.get(id);
    }
}
