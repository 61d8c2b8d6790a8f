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
 * Version 2: transactional id (modified UTF-8), count (int), then count × (broker int, last
 * prepared serial long), ascending broker. Version 1, written before transactions spanned brokers:
 * transactional id, last prepared serial (long) on the sink's one broker (0: none).
 */
@Internal
public final class NearstreamWriterStateSerializer
        implements SimpleVersionedSerializer<NearstreamWriterState> {

    private static final int VERSION = 2;

    @Override
    public int getVersion() {
        return VERSION;
    }

    @Override
    public byte[] serialize(NearstreamWriterState state) throws IOException {
        DataOutputSerializer out = new DataOutputSerializer(32);
        out.writeUTF(state.transactionalId());
        Map<Integer, Long> serials = new TreeMap<>(state.lastPreparedSerialByBroker());
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
        if (version != VERSION) {
            throw new IOException("unknown Nearstream writer state version " + version);
        }
        int count = in.readInt();
        if (count < 0) {
            throw new IOException("corrupt Nearstream writer state: " + count + " brokers");
        }
        Map<Integer, Long> serials = new TreeMap<>();
        for (int i = 0; i < count; i++) {
            serials.put(in.readInt(), in.readLong());
        }
        return new NearstreamWriterState(id, serials);
    }
}
