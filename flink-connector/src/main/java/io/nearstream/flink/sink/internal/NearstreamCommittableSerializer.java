package io.nearstream.flink.sink.internal;

import java.io.IOException;
import org.apache.flink.annotation.Internal;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;

/** Version 1: stream, transactional id (modified UTF-8), epoch, serial (longs). */
@Internal
public final class NearstreamCommittableSerializer
        implements SimpleVersionedSerializer<NearstreamCommittable> {

    private static final int VERSION = 1;

    @Override
    public int getVersion() {
        return VERSION;
    }

    @Override
    public byte[] serialize(NearstreamCommittable c) throws IOException {
        DataOutputSerializer out = new DataOutputSerializer(64);
        out.writeUTF(c.stream());
        out.writeUTF(c.transactionalId());
        out.writeLong(c.epoch());
        out.writeLong(c.serial());
        return out.getCopyOfBuffer();
    }

    @Override
    public NearstreamCommittable deserialize(int version, byte[] serialized) throws IOException {
        if (version != VERSION) {
            throw new IOException("unknown Nearstream committable version " + version);
        }
        DataInputDeserializer in = new DataInputDeserializer(serialized);
        return new NearstreamCommittable(in.readUTF(), in.readUTF(), in.readLong(), in.readLong());
    }
}
