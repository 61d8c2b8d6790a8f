package io.nearstream.flink.source.testutils;

import io.nearstream.client.AppendResult;
import io.nearstream.client.ChunkBuilder;
import io.nearstream.client.NearstreamClient;
import io.nearstream.client.Position;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Writes test records to a real broker as raw chunks (known chunking, no producer batching). */
public final class NearstreamTestData {

    private NearstreamTestData() {}

    /**
     * Appends {@code records} to {@code streamlet} in chunks of {@code perChunk} records, each
     * chunk stamped {@code timestamp}; returns the chunks' positions.
     */
    public static List<Position> append(
            NearstreamClient client,
            String stream,
            int streamlet,
            List<String> records,
            int perChunk,
            long timestamp) {
        List<Position> positions = new ArrayList<>();
        ChunkBuilder builder = new ChunkBuilder(64 * 1024);
        for (int i = 0; i < records.size(); i++) {
            builder.add(records.get(i).getBytes(StandardCharsets.UTF_8));
            if (builder.recordCount() == perChunk || i == records.size() - 1) {
                positions.add(
                        appendChunk(client, stream, streamlet, builder.build(0, 0, timestamp)));
                builder.reset();
            }
        }
        return positions;
    }

    /** Appends one encoded chunk and checks that the broker stored it. */
    public static Position appendChunk(
            NearstreamClient client, String stream, int streamlet, byte[] chunk) {
        try {
            AppendResult result =
                    client.append(stream, new int[] {streamlet}, List.of(chunk))
                            .get(30, TimeUnit.SECONDS)
                            .get(0);
            if (!result.ok()) {
                throw new IllegalStateException(
                        "append to " + stream + "/" + streamlet + " failed: " + result);
            }
            return result.position();
        } catch (Exception e) {
            throw new IllegalStateException("append to " + stream + "/" + streamlet + " failed", e);
        }
    }
}
