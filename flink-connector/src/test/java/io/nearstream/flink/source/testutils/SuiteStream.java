package io.nearstream.flink.source.testutils;

import io.nearstream.client.StreamConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * The stream of one case of Flink's connector test suites (source and sink): named for the case,
 * created when the case first needs it, deleted when the case closes; and the suites' test records.
 */
public final class SuiteStream {

    private final NearstreamExternalSystem system;
    private final String name;
    private final int streamlets;
    private boolean created;

    public SuiteStream(
            NearstreamExternalSystem system, String kind, String testName, int streamlets) {
        this.system = system;
        this.name = NearstreamExternalSystem.streamName(kind, testName);
        this.streamlets = streamlets;
    }

    public String name() {
        return name;
    }

    public synchronized void ensureCreated() {
        if (!created) {
            try {
                system.client()
                        .createStream(StreamConfig.of(name, streamlets))
                        .get(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw new IllegalStateException("cannot create stream " + name, e);
            }
            created = true;
        }
    }

    public synchronized void deleteIfCreated() throws Exception {
        if (created) {
            system.client().deleteStream(name).get(30, TimeUnit.SECONDS);
            created = false;
        }
    }

    /**
     * {@code min} to {@code max - 1} records, each {@code "<tag>-"} and 1 to {@code maxLetters}
     * random letters, the same for the same seed.
     */
    public static List<String> randomRecords(
            Object tag, long seed, int min, int max, int maxLetters) {
        Random random = new Random(seed);
        int n = min + random.nextInt(max - min);
        List<String> records = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            StringBuilder value = new StringBuilder().append(tag).append('-');
            int length = 1 + random.nextInt(maxLetters);
            for (int c = 0; c < length; c++) {
                value.append((char) ('a' + random.nextInt(26)));
            }
            records.add(value.toString());
        }
        return records;
    }
}
