package io.nearstream.flink.source.reader;

import io.nearstream.flink.source.split.NearstreamSplit;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import java.util.function.Supplier;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.source.reader.fetcher.SplitFetcher;
import org.apache.flink.connector.base.source.reader.fetcher.SplitFetcherManager;
import org.apache.flink.connector.base.source.reader.splitreader.SplitReader;

/**
 * Two fetchers, one per read mode, for a reader that pushes some splits and pulls the others (AUTO
 * over a broker cluster: the streamlets of its host's broker by push, the other brokers' by fetch
 * RPCs; docs/flink-connector.md, "Over a broker cluster"). Each split goes to the fetcher of its
 * mode, which owns it until it finishes or is removed; a fetcher left without splits shuts down, as
 * Flink's do, and a later split of its mode starts a new one. Each mode keeps its own thread, so a
 * push fetcher waiting on its ring never delays the pulls, nor a long poll the pushed slots.
 */
@Internal
public final class ReadModeFetcherManager extends SplitFetcherManager<RecordRun, NearstreamSplit> {

    private final Predicate<NearstreamSplit> pushed;
    private final Supplier<SplitReader<RecordRun, NearstreamSplit>> pushReaders;
    private final Supplier<SplitReader<RecordRun, NearstreamSplit>> pullReaders;

    /** What the next {@link #createSplitFetcher()} builds; set under this object's lock. */
    private Supplier<SplitReader<RecordRun, NearstreamSplit>> next;

    private int pushFetcher = -1;
    private int pullFetcher = -1;

    public ReadModeFetcherManager(
            Predicate<NearstreamSplit> pushed,
            Supplier<SplitReader<RecordRun, NearstreamSplit>> pushReaders,
            Supplier<SplitReader<RecordRun, NearstreamSplit>> pullReaders,
            Configuration config) {
        this(new Holder(), pushed, pushReaders, pullReaders, config);
    }

    // The base class takes its one supplier at construction: it reads `next` through a holder
    // filled once this object exists.
    private ReadModeFetcherManager(
            Holder holder,
            Predicate<NearstreamSplit> pushed,
            Supplier<SplitReader<RecordRun, NearstreamSplit>> pushReaders,
            Supplier<SplitReader<RecordRun, NearstreamSplit>> pullReaders,
            Configuration config) {
        super(() -> holder.manager.next.get(), config);
        holder.manager = this;
        this.pushed = pushed;
        this.pushReaders = pushReaders;
        this.pullReaders = pullReaders;
    }

    private static final class Holder {
        ReadModeFetcherManager manager;
    }

    @Override
    public synchronized void addSplits(List<NearstreamSplit> splits) {
        List<NearstreamSplit> push = new ArrayList<>();
        List<NearstreamSplit> pull = new ArrayList<>();
        for (NearstreamSplit split : splits) {
            (pushed.test(split) ? push : pull).add(split);
        }
        if (!push.isEmpty()) {
            pushFetcher = add(pushFetcher, pushReaders, push);
        }
        if (!pull.isEmpty()) {
            pullFetcher = add(pullFetcher, pullReaders, pull);
        }
    }

    /** Adds to the running fetcher {@code id}, or starts a new one; returns its id. */
    private int add(
            int id,
            Supplier<SplitReader<RecordRun, NearstreamSplit>> readers,
            List<NearstreamSplit> splits) {
        SplitFetcher<RecordRun, NearstreamSplit> fetcher = running(id);
        if (fetcher != null) {
            fetcher.addSplits(splits);
            return id;
        }
        next = readers;
        fetcher = createSplitFetcher();
        fetcher.addSplits(splits);
        startFetcher(fetcher);
        return fetcher.fetcherId();
    }

    @Override
    public synchronized void removeSplits(List<NearstreamSplit> splits) {
        List<NearstreamSplit> push = new ArrayList<>();
        List<NearstreamSplit> pull = new ArrayList<>();
        for (NearstreamSplit split : splits) {
            (pushed.test(split) ? push : pull).add(split);
        }
        remove(pushFetcher, push);
        remove(pullFetcher, pull);
    }

    private void remove(int id, List<NearstreamSplit> splits) {
        SplitFetcher<RecordRun, NearstreamSplit> fetcher = running(id);
        if (fetcher != null && !splits.isEmpty()) {
            fetcher.removeSplits(splits);
        }
    }

    @Nullable
    private SplitFetcher<RecordRun, NearstreamSplit> running(int id) {
        return id < 0 ? null : fetchers.get(id);
    }
}
