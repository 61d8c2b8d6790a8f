package io.nearstream.flink.source.enumerator;

import io.nearstream.flink.source.split.NearstreamSplit;
import io.nearstream.flink.source.split.NearstreamSplitSerializer;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.annotation.Internal;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.core.memory.DataOutputView;

/**
 * Versioned serializer of {@link NearstreamEnumState}.
 *
 * <p>Version 1 layout (big-endian): initial-discovery-finished ({@code boolean}), assigned split
 * count ({@code int}) and the splits, unassigned split count ({@code int}) and the splits; each
 * split in {@link NearstreamSplitSerializer} version 1 layout.
 */
@Internal
public final class NearstreamEnumStateSerializer
        implements SimpleVersionedSerializer<NearstreamEnumState> {

    private static final int VERSION_1 = 1;
    private static final int CURRENT_VERSION = VERSION_1;

    /** The split layout written inside an enumerator state of {@link #VERSION_1}. */
    private static final int SPLIT_VERSION_IN_V1 = 1;

    @Override
    public int getVersion() {
        return CURRENT_VERSION;
    }

    @Override
    public byte[] serialize(NearstreamEnumState state) throws IOException {
        DataOutputSerializer out = new DataOutputSerializer(256);
        out.writeBoolean(state.initialDiscoveryFinished());
        writeSplits(state.assignedSplits(), out);
        writeSplits(state.unassignedSplits(), out);
        return out.getCopyOfBuffer();
    }

    @Override
    public NearstreamEnumState deserialize(int version, byte[] serialized) throws IOException {
        if (version != VERSION_1) {
            throw new IOException(
                    "Unknown NearstreamEnumState serializer version "
                            + version
                            + "; this connector reads version "
                            + VERSION_1
                            + " (was the state written by a newer connector?)");
        }
        DataInputDeserializer in = new DataInputDeserializer(serialized);
        boolean initialDiscoveryFinished = in.readBoolean();
        List<NearstreamSplit> assigned = readSplits(in);
        List<NearstreamSplit> unassigned = readSplits(in);
        if (in.available() > 0) {
            throw new IOException(
                    "Trailing " + in.available() + " bytes after a NearstreamEnumState");
        }
        return new NearstreamEnumState(assigned, unassigned, initialDiscoveryFinished);
    }

    private static void writeSplits(List<NearstreamSplit> splits, DataOutputView out)
            throws IOException {
        out.writeInt(splits.size());
        for (NearstreamSplit split : splits) {
            NearstreamSplitSerializer.write(split, out);
        }
    }

    private static List<NearstreamSplit> readSplits(DataInputView in) throws IOException {
        int n = in.readInt();
        if (n < 0) {
            throw new IOException("negative split count " + n);
        }
        List<NearstreamSplit> splits = new ArrayList<>(Math.min(n, 1024));
        for (int i = 0; i < n; i++) {
            splits.add(NearstreamSplitSerializer.read(SPLIT_VERSION_IN_V1, in));
        }
        return splits;
    }
}
