package io.nearstream.flink.sink.internal;

import io.nearstream.client.BrokerTxnRef;
import io.nearstream.client.TxnRef;
import java.io.IOException;
import org.apache.flink.annotation.Internal;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;

/**
 * Version 3: stream, transactional id (modified UTF-8), epoch, serial (longs), broker, scope (ints;
 * the scope {@code 0xFFFFFFFF} for the broker scope). Version 2, written before replicated streams
 * took transactions, has no scope: its transactions are in the broker scope. Version 1, written
 * before transactions spanned brokers, has no broker either: its transactions are of a sink that
 * wrote to one broker.
 */
@Internal
public final class NearstreamCommittableSerializer
        implements SimpleVersionedSerializer<NearstreamCommittable> {

    private static final int VERSION = 3;

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
        out.writeInt(c.broker());
        out.writeInt(c.scope());
        return out.getCopyOfBuffer();
    }

    @Override
    public NearstreamCommittable deserialize(int version, byte[] serialized) throws IOException {
        if (version < 1 || version > VERSION) {
            throw new IOException("unknown Nearstream committable version " + version);
        }
        DataInputDeserializer in = new DataInputDeserializer(serialized);
        String stream = in.readUTF();
        String id = in.readUTF();
        long epoch = in.readLong();
        long serial = in.readLong();
        int broker = version == 1 ? BrokerTxnRef.ONLY_BROKER : in.readInt();
        int scope = version < 3 ? TxnRef.BROKER_SCOPE : in.readInt();
        return new NearstreamCommittable(stream, broker, id, epoch, serial, scope);
    }
}
