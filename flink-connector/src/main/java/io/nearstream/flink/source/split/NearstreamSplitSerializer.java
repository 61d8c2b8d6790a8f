package io.nearstream.flink.source.split;

import io.nearstream.client.Position;
import java.io.IOException;
import org.apache.flink.annotation.Internal;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.core.memory.DataOutputView;

/**
 * Versioned serializer of {@link NearstreamSplit}s (checkpoints and split assignment).
 *
 * <p>Version 1 layout (big-endian, {@link java.io.DataOutput}): stream ({@code writeUTF}),
 * streamlet ({@code int}), starting position (group {@code long}, segment {@code long}, offset
 * {@code int}), records to skip ({@code int}), has-stopping-position ({@code boolean}) and, when
 * set, the stopping position.
 */
@Internal
public final class NearstreamSplitSerializer implements SimpleVersionedSerializer<NearstreamSplit> {

    public static final NearstreamSplitSerializer INSTANCE = new NearstreamSplitSerializer();

    private static final int VERSION_1 = 1;
    private static final int CURRENT_VERSION = VERSION_1;

    @Override
    public int getVersion() {
        return CURRENT_VERSION;
    }

    @Override
    public byte[] serialize(NearstreamSplit split) throws IOException {
        DataOutputSerializer out = new DataOutputSerializer(64);
        write(split, out);
        return out.getCopyOfBuffer();
    }

    @Override
    public NearstreamSplit deserialize(int version, byte[] serialized) throws IOException {
        DataInputDeserializer in = new DataInputDeserializer(serialized);
        NearstreamSplit split = read(version, in);
        if (in.available() > 0) {
            throw new IOException(
                    "Trailing "
                            + in.available()
                            + " bytes after a NearstreamSplit (version "
                            + version
                            + ")");
        }
        return split;
    }

    /** Writes a split in the current version; also used inside the enumerator state. */
    public static void write(NearstreamSplit split, DataOutputView out) throws IOException {
        out.writeUTF(split.stream());
        out.writeInt(split.streamlet());
        writePosition(split.startingPosition(), out);
        out.writeInt(split.recordsToSkip());
        out.writeBoolean(split.stoppingPosition().isPresent());
        if (split.stoppingPosition().isPresent()) {
            writePosition(split.stoppingPosition().get(), out);
        }
    }

    /** Reads a split written in {@code version}. */
    public static NearstreamSplit read(int version, DataInputView in) throws IOException {
        if (version != VERSION_1) {
            throw new IOException(
                    "Unknown NearstreamSplit serializer version "
                            + version
                            + "; this connector reads version "
                            + VERSION_1
                            + " (was the state written by a newer connector?)");
        }
        String stream = in.readUTF();
        int streamlet = in.readInt();
        Position start = readPosition(in);
        int skip = in.readInt();
        Position stop = in.readBoolean() ? readPosition(in) : null;
        return new NearstreamSplit(stream, streamlet, start, skip, stop);
    }

    private static void writePosition(Position p, DataOutputView out) throws IOException {
        out.writeLong(p.group());
        out.writeLong(p.segment());
        out.writeInt(p.offset());
    }

    private static Position readPosition(DataInputView in) throws IOException {
        long group = in.readLong();
        long segment = in.readLong();
        int offset = in.readInt();
        return new Position(group, segment, offset);
    }
}
