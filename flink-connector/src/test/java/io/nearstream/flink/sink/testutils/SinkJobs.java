package io.nearstream.flink.sink.testutils;

import io.nearstream.flink.sink.NearstreamRecordSerializationSchema;
import io.nearstream.flink.sink.NearstreamSink;
import io.nearstream.flink.sink.NearstreamSinkBuilder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import javax.annotation.Nullable;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.connector.base.DeliveryGuarantee;

/** The sink the tests write with, and what they check the stream's contents with. */
public final class SinkJobs {

    private SinkJobs() {}

    /** A sink of strings; the key is the record itself, so records spread over the streamlets. */
    public static NearstreamSink<String> sink(
            String broker, String stream, DeliveryGuarantee guarantee, @Nullable String prefix) {
        NearstreamSinkBuilder<String> builder =
                NearstreamSink.<String>builder()
                        .setBrokers(broker)
                        .setStream(stream)
                        .setRecordSerializer(
                                NearstreamRecordSerializationSchema.<String>builder()
                                        .setValueSerializationSchema(new SimpleStringSchema())
                                        .setKeySerializationSchema(new SimpleStringSchema())
                                        .build())
                        .setDeliveryGuarantee(guarantee);
        if (prefix != null) {
            builder.setTransactionalIdPrefix(prefix);
        }
        return builder.build();
    }

    /** How often each of the numbers {@code 0 .. n-1} was read, and anything else read. */
    public static Map<String, Integer> counts(List<String> read) {
        Map<String, Integer> counts = new TreeMap<>();
        for (String v : read) {
            counts.merge(v, 1, Integer::sum);
        }
        return counts;
    }

    /** The numbers {@code 0 .. n-1} that were never read. */
    public static List<Long> missing(Map<String, Integer> counts, long n) {
        List<Long> missing = new ArrayList<>();
        for (long i = 0; i < n; i++) {
            if (!counts.containsKey(Long.toString(i))) {
                missing.add(i);
            }
        }
        return missing;
    }

    /** The records read more than once, as {@code "value xN"}. */
    public static List<String> duplicated(Map<String, Integer> counts) {
        return counts.entrySet().stream()
                .filter(e -> e.getValue() > 1)
                .map(e -> e.getKey() + " x" + e.getValue())
                .toList();
    }
}
