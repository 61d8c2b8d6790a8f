package io.nearstream.flink.sink.internal;

import java.io.IOException;
import org.apache.flink.annotation.Internal;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;

/** Version 1: transactional id (modified UTF-8), last prepared serial (long). */
@Internal
public final class NearstreamWriterStateSerializer
        implements SimpleVersionedSerializer<NearstreamWriterState> {

    private static final int VERSION = 1;

    @Override
    public int getVersion() {
        return VERSION;
    }

    @Override
    public byte[] serialize(NearstreamWriterState state) throws IOException {
        DataOutputSerializer out = new DataOutputSerializer(32);
        out.writeUTF(state.transactionalId());
        out.writeLong(state.lastPreparedSerial());
        return out.getCopyOfBuffer();
    }

    @Override
    public NearstreamWriterState deserialize(int version, byte[] serialized) throws IOException {
        if (version != VERSION) {
            throw new IOException("unknown Nearstream writer state version " + version);
        }
        DataInputDeserializer in = new DataInputDeserializer(serialized);
        return new NearstreamWriterState(in.readUTF(), in.readLong());
    }
}
