package io.nearstream.benchmarks.workloads;

import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NearstreamPullConsumer;
import io.nearstream.client.NearstreamRecord;
import io.nearstream.client.NettyNearstreamClient;
import io.nearstream.client.StartingPosition;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * The records the workloads' results become in an output stream ({@code JobRunner --output-stream
 * NAME}), one UTF-8 text line per record, without a newline:
 *
 * <ul>
 *   <li>word count: {@code word<TAB>count}, one per running-count update (the largest count of a
 *       word is its total);
 *   <li>windowed word count: {@code word<TAB>count<TAB>window_end}, one per word and window;
 *   <li>YSB: {@link CampaignWindowCount#toCsv()}, {@code
 *       campaign_id,window_end,count,max_event_time,emitted_at,latency_ms}, one per campaign and
 *       window.
 * </ul>
 *
 * <p>Each record's key is the word or the campaign id, so the results of one word or campaign go to
 * one streamlet, in the order the job emitted them. {@link #readAll} reads a stream back; {@code
 * main} prints one:
 *
 * <pre>
 * java -cp benchmarks.jar io.nearstream.benchmarks.workloads.ResultRecords HOST:PORT STREAM
 * </pre>
 */
public final class ResultRecords {

    private ResultRecords() {}

    /** {@code word<TAB>count}. */
    public static String wordCount(String word, long count) {
        return word + "\t" + count;
    }

    /** {@code word<TAB>count<TAB>window_end}. */
    public static String wordWindowCount(WordWindowCount w) {
        return w.word + "\t" + w.count + "\t" + w.windowEnd;
    }

    /**
     * Each word's largest count among {@code word<TAB>count} records: its total, also when an
     * at-least-once job wrote some updates twice.
     *
     * @throws IllegalArgumentException on a record of another form
     */
    public static TreeMap<String, Long> wordTotals(List<String> records) {
        TreeMap<String, Long> totals = new TreeMap<>();
        for (String r : records) {
            int tab = r.indexOf('\t');
            if (tab <= 0 || r.indexOf('\t', tab + 1) >= 0) {
                throw new IllegalArgumentException("not a word<TAB>count record: " + r);
            }
            long count;
            try {
                count = Long.parseLong(r.substring(tab + 1));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("not a word<TAB>count record: " + r, e);
            }
            totals.merge(r.substring(0, tab), count, Math::max);
        }
        return totals;
    }

    /**
     * Every record of {@code stream} as readers see it (a pull consumer from the earliest position
     * of every streamlet), until none has come for {@code quiet}: all there is once the job that
     * wrote them has ended. Records of one streamlet keep their order; streamlets follow one
     * another in no fixed order.
     */
    public static List<String> readAll(NearstreamClient client, String stream, Duration quiet)
            throws Exception {
        int streamlets = client.describeStream(stream).get(30, TimeUnit.SECONDS).streamlets();
        Map<Integer, StartingPosition> starts = new HashMap<>();
        for (int s = 0; s < streamlets; s++) {
            starts.put(s, StartingPosition.earliest());
        }
        List<String> all = new ArrayList<>();
        try (NearstreamPullConsumer consumer =
                NearstreamPullConsumer.builder(client, stream).build()) {
            consumer.assign(starts);
            long quietSince = System.nanoTime();
            while (System.nanoTime() - quietSince < quiet.toNanos()) {
                List<NearstreamRecord> batch = consumer.poll(Duration.ofMillis(200));
                for (NearstreamRecord r : batch) {
                    all.add(new String(r.value(), StandardCharsets.UTF_8));
                }
                if (!batch.isEmpty()) {
                    quietSince = System.nanoTime();
                }
            }
        }
        return all;
    }

    /** Prints every record of a stream, one a line. */
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: ResultRecords HOST:PORT STREAM");
            System.exit(2);
        }
        try (NearstreamClient client = NettyNearstreamClient.connect(args[0])) {
            for (String r : readAll(client, args[1], Duration.ofSeconds(2))) {
                System.out.println(r);
            }
        }
        System.exit(0); // Netty leaves non-daemon threads behind
    }
}
