package io.nearstream.flink.source.reader.deserializer;

import java.io.IOException;
import org.apache.flink.annotation.Internal;
import org.apache.flink.util.Collector;

/**
 * A deserialization schema that reads nothing but a record's value. The record emitter hands such a
 * schema the value alone and so skips making a {@code NearstreamRecord} per record, which at tens
 * of millions of records per second is a measurable share of the task thread. The built-in {@code
 * bytes()}, {@code utf8()} and {@code of(DeserializationSchema)} schemas are such schemas.
 */
@Internal
public interface ValueOnlyDeserializer<T> {

    /** Does what {@code deserialize(record, out)} does, given {@code record.value()}. */
    void deserializeValue(byte[] value, Collector<T> out) throws IOException;
}
