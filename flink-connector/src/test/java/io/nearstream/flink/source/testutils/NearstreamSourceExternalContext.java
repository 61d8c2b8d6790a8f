package io.nearstream.flink.source.testutils;

import io.nearstream.client.NearstreamClient;
import io.nearstream.flink.source.NearstreamSource;
import io.nearstream.flink.source.NearstreamSourceBuilder;
import io.nearstream.flink.source.NearstreamStoppingPositions;
import io.nearstream.flink.source.ReadMode;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import java.net.URL;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.connector.testframe.external.ExternalSystemSplitDataWriter;
import org.apache.flink.connector.testframe.external.source.DataStreamSourceExternalContext;
import org.apache.flink.connector.testframe.external.source.TestingSourceSettings;

/**
 * One test case's view of the broker: a fresh stream of {@link #STREAMLETS} streamlets, one split
 * data writer per streamlet, and the source built as the framework asks (bounded: stop at the tails
 * when the job starts).
 *
 * <p>A stream's streamlet count is fixed at creation, unlike Kafka's partitions, so the stream is
 * created with as many streamlets as the suite's cases use at most; "creating a split" hands out
 * the next streamlet. Streamlets no writer uses stay empty and finish at once when bounded.
 */
public final class NearstreamSourceExternalContext
        implements DataStreamSourceExternalContext<String> {

    /** The most splits any case of {@code SourceTestSuiteBase} creates. */
    public static final int STREAMLETS = 4;

    private static final int MIN_RECORDS = 100;
    private static final int MAX_RECORDS = 300;

    private final NearstreamExternalSystem system;
    private final ReadMode readMode;
    private final String stream;
    private final List<NearstreamStreamletDataWriter> writers = new ArrayList<>();
    private boolean streamCreated;

    public NearstreamSourceExternalContext(NearstreamExternalSystem system, String testName) {
        this(system, testName, ReadMode.PULL);
    }

    public NearstreamSourceExternalContext(
            NearstreamExternalSystem system, String testName, ReadMode readMode) {
        this.system = system;
        this.readMode = readMode;
        this.stream =
                "suite-"
                        + testName.replaceAll("[^A-Za-z0-9]", "").toLowerCase()
                        + "-"
                        + Long.toHexString(ThreadLocalRandom.current().nextLong());
    }

    private synchronized void ensureStream() {
        if (!streamCreated) {
            try {
                system.client()
                        .createStream(io.nearstream.client.StreamConfig.of(stream, STREAMLETS))
                        .get(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw new IllegalStateException("cannot create stream " + stream, e);
            }
            streamCreated = true;
        }
    }

    @Override
    public Source<String, ?, ?> createSource(TestingSourceSettings sourceSettings) {
        ensureStream();
        NearstreamSourceBuilder<String> builder =
                NearstreamSource.<String>builder()
                        .setBrokers(system.address())
                        .setStream(stream)
                        .setReadMode(readMode)
                        .setDeserializer(NearstreamRecordDeserializationSchema.utf8())
                        .setFetchMaxWaitMs(200);
        if (sourceSettings.getBoundedness() == Boundedness.BOUNDED) {
            builder.setBounded(NearstreamStoppingPositions.latest());
        }
        return builder.build();
    }

    @Override
    public synchronized ExternalSystemSplitDataWriter<String> createSourceSplitDataWriter(
            TestingSourceSettings sourceSettings) {
        ensureStream();
        if (writers.size() == STREAMLETS) {
            throw new IllegalStateException(
                    "stream " + stream + " has " + STREAMLETS + " streamlets, all have a writer");
        }
        NearstreamClient client = system.client();
        NearstreamStreamletDataWriter writer =
                new NearstreamStreamletDataWriter(client, stream, writers.size());
        writers.add(writer);
        return writer;
    }

    @Override
    public List<String> generateTestData(
            TestingSourceSettings sourceSettings, int splitIndex, long seed) {
        Random random = new Random(seed);
        int n = MIN_RECORDS + random.nextInt(MAX_RECORDS - MIN_RECORDS);
        List<String> records = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            StringBuilder value = new StringBuilder().append(splitIndex).append('-');
            int length = 1 + random.nextInt(50);
            for (int c = 0; c < length; c++) {
                value.append((char) ('a' + random.nextInt(26)));
            }
            records.add(value.toString());
        }
        return records;
    }

    @Override
    public TypeInformation<String> getProducedType() {
        return Types.STRING;
    }

    @Override
    public List<URL> getConnectorJarPaths() {
        return List.of(); // the MiniCluster runs on the test class path
    }

    @Override
    public synchronized void close() throws Exception {
        writers.clear();
        if (streamCreated) {
            system.client().deleteStream(stream).get(30, TimeUnit.SECONDS);
        }
    }

    @Override
    public String toString() {
        return "Nearstream stream of " + STREAMLETS + " streamlets";
    }
}
