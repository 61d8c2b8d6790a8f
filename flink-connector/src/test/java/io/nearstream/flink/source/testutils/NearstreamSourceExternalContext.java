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
    private final SuiteStream stream;
    private final List<NearstreamStreamletDataWriter> writers = new ArrayList<>();

    public NearstreamSourceExternalContext(NearstreamExternalSystem system, String testName) {
        this(system, testName, ReadMode.PULL);
    }

    public NearstreamSourceExternalContext(
            NearstreamExternalSystem system, String testName, ReadMode readMode) {
        this.system = system;
        this.readMode = readMode;
        this.stream = new SuiteStream(system, "suite", testName, STREAMLETS);
    }

    @Override
    public Source<String, ?, ?> createSource(TestingSourceSettings sourceSettings) {
        stream.ensureCreated();
        NearstreamSourceBuilder<String> builder =
                NearstreamSource.<String>builder()
                        .setBrokers(system.address())
                        .setStream(stream.name())
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
        stream.ensureCreated();
        if (writers.size() == STREAMLETS) {
            throw new IllegalStateException(
                    "stream "
                            + stream.name()
                            + " has "
                            + STREAMLETS
                            + " streamlets, all have a writer");
        }
        NearstreamClient client = system.client();
        NearstreamStreamletDataWriter writer =
                new NearstreamStreamletDataWriter(client, stream.name(), writers.size());
        writers.add(writer);
        return writer;
    }

    @Override
    public List<String> generateTestData(
            TestingSourceSettings sourceSettings, int splitIndex, long seed) {
        return SuiteStream.randomRecords(splitIndex, seed, MIN_RECORDS, MAX_RECORDS, 50);
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
        stream.deleteIfCreated();
    }

    @Override
    public String toString() {
        return "Nearstream stream of " + STREAMLETS + " streamlets";
    }
}
