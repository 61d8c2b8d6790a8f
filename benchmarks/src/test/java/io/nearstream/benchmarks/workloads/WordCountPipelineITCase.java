package io.nearstream.benchmarks.workloads;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeHint;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** The word-count pipelines on a bounded in-memory source, checked against the reference count. */
class WordCountPipelineITCase {

    @RegisterExtension
    static final MiniClusterExtension FLINK =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    /** Milliseconds of event time between consecutive records in the windowed test. */
    private static final long RECORD_SPACING_MS = 350;

    @TempDir Path tmp;

    private static StreamExecutionEnvironment env() {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        return env;
    }

    @Test
    void wordCountEqualsTheReferenceCount() throws Exception {
        Path text = ReferenceWordCount.hamletOpening();
        List<byte[]> records = TextRecords.read(text, 100);
        Path out = tmp.resolve("counts");

        StreamExecutionEnvironment env = env();
        DataStream<byte[]> source =
                env.fromData(records, PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);
        WordCountPipeline.wordCounts(source).sinkTo(WordCountFileSink.maxPerWord(out));
        env.execute("word count");

        TreeMap<String, Long> counts = WordCountFiles.readParts(out, WordCountFiles.Merge.MAX);
        Map<String, Long> reference = ReferenceWordCount.count(text, 1, tmp);
        assertThat(reference).hasSizeGreaterThan(800);
        assertThat(counts).isEqualTo(reference);
        try (var parts = Files.list(out)) {
            assertThat(parts.count()).as("one file per sink subtask").isEqualTo(2);
        }
    }

    @Test
    void windowedWordCountMatchesWindowsComputedByHand() throws Exception {
        Path text = ReferenceWordCount.hamletOpening();
        List<byte[]> records = TextRecords.read(text, 100);
        List<Tuple2<Long, byte[]>> stamped = new ArrayList<>();
        for (int i = 0; i < records.size(); i++) {
            stamped.add(Tuple2.of(i * RECORD_SPACING_MS, records.get(i)));
        }

        StreamExecutionEnvironment env = env();
        // No watermarks before the end of input: every window fires once, when the input ends.
        DataStream<byte[]> source =
                env.fromData(stamped, TypeInformation.of(new TypeHint<Tuple2<Long, byte[]>>() {}))
                        .assignTimestampsAndWatermarks(
                                WatermarkStrategy.<Tuple2<Long, byte[]>>noWatermarks()
                                        .withTimestampAssigner((r, ts) -> r.f0))
                        .map(r -> r.f1)
                        .returns(PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);
        List<WordWindowCount> windows = new ArrayList<>();
        try (CloseableIterator<WordWindowCount> it =
                WordCountPipeline.windowedWordCounts(source).executeAndCollect()) {
            it.forEachRemaining(windows::add);
        }

        // Expected, from the rule: a record at t is in the windows ending at e = s + 5 s for every
        // slide start s (a multiple of 1 s) with s <= t < s + 5 s.
        Pattern word = Pattern.compile("[A-Za-z0-9]+");
        Map<String, Long> expected = new HashMap<>();
        for (Tuple2<Long, byte[]> r : stamped) {
            Matcher m = word.matcher(new String(r.f1, java.nio.charset.StandardCharsets.US_ASCII));
            while (m.find()) {
                String w = m.group().toLowerCase(java.util.Locale.ROOT);
                long lastStart = r.f0 - r.f0 % 1_000;
                for (long s = lastStart; s > r.f0 - 5_000; s -= 1_000) {
                    expected.merge(w + "@" + (s + 5_000), 1L, Long::sum);
                }
            }
        }
        Map<String, Long> actual = new HashMap<>();
        for (WordWindowCount w : windows) {
            assertThat(actual.put(w.word + "@" + w.windowEnd, w.count))
                    .as("one result per word and window")
                    .isNull();
        }
        assertThat(actual).isEqualTo(expected);

        // And the window counts of a word add up to 5 times its reference total.
        Map<String, Long> sums = new TreeMap<>();
        windows.forEach(w -> sums.merge(w.word, w.count, Long::sum));
        Map<String, Long> fiveTimes = new TreeMap<>();
        ReferenceWordCount.count(text, 1, tmp)
                .forEach((w, c) -> fiveTimes.put(w, c * WordCountPipeline.WINDOW_SECONDS));
        assertThat(sums).isEqualTo(fiveTimes);
    }
}
