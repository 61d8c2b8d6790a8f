package io.nearstream.benchmarks.workloads;

import java.time.Duration;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/**
 * The Wikipedia workloads of the pull-vs-push co-location paper (Marcu and Bouvry, Listing 2) over
 * text records, whatever source delivers them:
 *
 * <ul>
 *   <li>{@link #wordCounts}: streaming word count, {@code flatMap(Tokenizer) -> keyBy(word) ->
 *       sum}; every word occurrence emits the word's running count, so the last (largest) count per
 *       word is its total;
 *   <li>{@link #windowedWordCounts}: the same counts per sliding window of {@value #WINDOW_SECONDS}
 *       s sliding every {@value #SLIDE_SECONDS} s.
 * </ul>
 *
 * <p><b>Windows run on event time, the record's timestamp.</b> The listing uses {@code
 * countWindow}, the text says "window size equals five seconds, sliding each second"; we take the
 * text, and event time rather than processing time so that the windowed results depend on the
 * stored data only: a pull and a push job over the same stream produce identical windows. A
 * Nearstream source stamps each record with its chunk's timestamp (the producer's wall clock when
 * it opened the chunk), so the source must be built with {@link #sourceWatermarks()}: {@code
 * env.fromSource(source, WordCountPipeline.sourceWatermarks(), "nearstream")}. (On a bounded source
 * with no watermarks every window still fires, at end of input.) Each word occurrence is in exactly
 * {@value #WINDOW_SECONDS} windows, so on bounded input the window counts of a word sum to {@value
 * #WINDOW_SECONDS} times its total.
 *
 * <pre>{@code
 * DataStream<byte[]> text = env.fromSource(source, WordCountPipeline.sourceWatermarks(), "text");
 * WordCountPipeline.wordCounts(text)
 *         .sinkTo(WordCountFileSink.maxPerWord(outputDir));
 * }</pre>
 */
public final class WordCountPipeline {

    public static final int WINDOW_SECONDS = 5;
    public static final int SLIDE_SECONDS = 1;

    /**
     * How far a record's timestamp may lag the newest one seen on its streamlet: chunks of one
     * producer are stamped in order, several producers on a streamlet interleave by about their
     * linger time.
     */
    public static final Duration MAX_OUT_OF_ORDERNESS = Duration.ofSeconds(1);

    private WordCountPipeline() {}

    /** Per-split watermarks for the source of {@link #windowedWordCounts}. */
    public static WatermarkStrategy<byte[]> sourceWatermarks() {
        return WatermarkStrategy.<byte[]>forBoundedOutOfOrderness(MAX_OUT_OF_ORDERNESS)
                .withIdleness(Duration.ofSeconds(5));
    }

    /** Streaming word count: {@code (word, running count)} per word occurrence. */
    public static DataStream<Tuple2<String, Long>> wordCounts(DataStream<byte[]> text) {
        return text.flatMap(new WordTokenizer())
                .name("tokenize")
                .keyBy(t -> t.f0)
                .sum(1)
                .name("count per word");
    }

    /** Windowed word count: one result per word and sliding window the word occurs in. */
    public static DataStream<WordWindowCount> windowedWordCounts(DataStream<byte[]> text) {
        return text.flatMap(new WordTokenizer())
                .name("tokenize")
                .keyBy(t -> t.f0)
                .window(
                        SlidingEventTimeWindows.of(
                                Duration.ofSeconds(WINDOW_SECONDS),
                                Duration.ofSeconds(SLIDE_SECONDS)))
                .reduce(new SumCounts(), new WithWindowEnd())
                .name("count per word and window");
    }

    /** Adds the counts of one word (pre-aggregates inside each window). */
    private static final class SumCounts implements ReduceFunction<Tuple2<String, Long>> {
        private static final long serialVersionUID = 1L;

        @Override
        public Tuple2<String, Long> reduce(Tuple2<String, Long> a, Tuple2<String, Long> b) {
            return Tuple2.of(a.f0, a.f1 + b.f1);
        }
    }

    /** Attaches the window's end to the word's count. */
    private static final class WithWindowEnd
            extends ProcessWindowFunction<
                    Tuple2<String, Long>, WordWindowCount, String, TimeWindow> {
        private static final long serialVersionUID = 1L;

        @Override
        public void process(
                String word,
                Context context,
                Iterable<Tuple2<String, Long>> sums,
                Collector<WordWindowCount> out) {
            for (Tuple2<String, Long> sum : sums) {
                out.collect(new WordWindowCount(word, context.window().getEnd(), sum.f1));
            }
        }
    }
}
