package io.nearstream.flink.source.testutils;

import io.nearstream.client.NearstreamClient;
import java.util.List;
import org.apache.flink.connector.testframe.external.ExternalSystemSplitDataWriter;

/** Writes the framework's test records into one streamlet (= one split), 50 per chunk. */
public final class NearstreamStreamletDataWriter implements ExternalSystemSplitDataWriter<String> {

    private static final int RECORDS_PER_CHUNK = 50;

    private final NearstreamClient client;
    private final String stream;
    private final int streamlet;

    public NearstreamStreamletDataWriter(NearstreamClient client, String stream, int streamlet) {
        this.client = client;
        this.stream = stream;
        this.streamlet = streamlet;
    }

    @Override
    public void writeRecords(List<String> records) {
        NearstreamTestData.append(
                client, stream, streamlet, records, RECORDS_PER_CHUNK, System.currentTimeMillis());
    }

    public int streamlet() {
        return streamlet;
    }

    @Override
    public void close() {
        // The client belongs to the external system.
    }
}
