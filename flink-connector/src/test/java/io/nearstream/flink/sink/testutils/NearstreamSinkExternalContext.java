package io.nearstream.flink.sink.testutils;

import io.nearstream.flink.source.testutils.NearstreamExternalSystem;
import io.nearstream.flink.source.testutils.SuiteStream;
import java.net.URL;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.testframe.external.ExternalSystemDataReader;
import org.apache.flink.connector.testframe.external.sink.DataStreamSinkV2ExternalContext;
import org.apache.flink.connector.testframe.external.sink.TestingSinkSettings;

/**
 * One test case of Flink's sink test suite against the broker: a fresh stream of {@link
 * #STREAMLETS} streamlets, the sink with the case's semantics (exactly-once under a transactional
 * id prefix of the case's own, at-least-once otherwise), and a pull consumer reading what readers
 * see.
 */
public final class NearstreamSinkExternalContext
        implements DataStreamSinkV2ExternalContext<String> {

    private static final int STREAMLETS = 4;
    private static final int MIN_RECORDS = 100;
    private static final int MAX_RECORDS = 500;

    private final NearstreamExternalSystem system;
    private final SuiteStream stream;
    private final List<StreamReader> readers = new ArrayList<>();

    public NearstreamSinkExternalContext(NearstreamExternalSystem system, String testName) {
        this.system = system;
        this.stream = new SuiteStream(system, "sink-suite", testName, STREAMLETS);
    }

    @Override
    public Sink<String> createSink(TestingSinkSettings sinkSettings) {
        stream.ensureCreated();
        boolean exactlyOnce =
                sinkSettings.getCheckpointingMode()
                        == org.apache.flink.streaming.api.CheckpointingMode.EXACTLY_ONCE;
        // The prefix is the stream's: one per case, the same for the job restored from its
        // savepoint, so the restored writers take the first job's ids over.
        return SinkJobs.sink(
                system.address(),
                stream.name(),
                exactlyOnce ? DeliveryGuarantee.EXACTLY_ONCE : DeliveryGuarantee.AT_LEAST_ONCE,
                exactlyOnce ? stream.name() : null);
    }

    @Override
    public synchronized ExternalSystemDataReader<String> createSinkDataReader(
            TestingSinkSettings sinkSettings) {
        stream.ensureCreated();
        StreamReader reader = new StreamReader(system.client(), stream.name());
        readers.add(reader);
        return new ExternalSystemDataReader<>() {
            @Override
            public List<String> poll(Duration timeout) {
                return reader.poll(timeout);
            }

            @Override
            public void close() {
                reader.close();
            }
        };
    }

    @Override
    public List<String> generateTestData(TestingSinkSettings sinkSettings, long seed) {
        // Numbered records: the suite compares sets, so every record must be distinct.
        List<String> records = SuiteStream.randomRecords("r", seed, MIN_RECORDS, MAX_RECORDS, 40);
        for (int i = 0; i < records.size(); i++) {
            records.set(i, i + records.get(i));
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
        for (StreamReader r : readers) {
            r.close();
        }
        readers.clear();
        stream.deleteIfCreated();
    }

    @Override
    public String toString() {
        return "Nearstream stream of " + STREAMLETS + " streamlets";
    }
}
