package io.nearstream.flink.sink.internal;

import io.nearstream.client.BrokerTxnRef;
import java.io.IOException;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.annotation.Internal;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;

/**
 * Version 3: transactional id (modified UTF-8), whether the parts are streamlets (boolean), count
 * (int), then count × (part key int, last prepared serial long), ascending part key. Version 2,
 * written before replicated streams took transactions, has no flag: its parts are brokers. Version
 * 1, written before transactions spanned brokers: transactional id, last prepared serial (long) on
 * the sink's one broker (0: none).
 */
@Internal
public final class NearstreamWriterStateSerializer
        implements SimpleVersionedSerializer<NearstreamWriterState> {

    private static final int VERSION = 3;

    @Override
    public int getVersion() {
        return VERSION;
    }

    @Override
    public byte[] serialize(NearstreamWriterState state) throws IOException {
        DataOutputSerializer out = new DataOutputSerializer(32);
        out.writeUTF(state.transactionalId());
        out.writeBoolean(state.streamletScopes());
        Map<Integer, Long> serials = new TreeMap<>(state.lastPreparedSerialByPart());
        out.writeInt(serials.size());
        for (Map.Entry<Integer, Long> e : serials.entrySet()) {
            out.writeInt(e.getKey());
            out.writeLong(e.getValue());
        }
        return out.getCopyOfBuffer();
    }

    @Override
    public NearstreamWriterState deserialize(int version, byte[] serialized) throws IOException {
        DataInputDeserializer in = new DataInputDeserializer(serialized);
        String id = in.readUTF();
        if (version == 1) {
            long serial = in.readLong();
            return new NearstreamWriterState(
                    id, serial == 0 ? Map.of() : Map.of(BrokerTxnRef.ONLY_BROKER, serial));
        }
        if (version != 2 && version != VERSION) {
            throw new IOException("unknown Nearstream writer state version " + version);
        }
        boolean streamletScopes = version == VERSION && in.readBoolean();
        int count = in.readInt();
        if (count < 0) {
            throw new IOException("corrupt Nearstream writer state: " + count + " parts");
        }
        Map<Integer, Long> serials = new TreeMap<>();
        for (int i = 0; i < count; i++) {
            serials.put(in.readInt(), in.readLong());
        }
        return new NearstreamWriterState(id, streamletScopes, serials);
    }
}
