package io.nearstream.benchmarks.sink;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.flink.connector.base.DeliveryGuarantee;

/** The sinks {@link SinkThroughputBenchmark} compares, by the name its flags and files use. */
public enum SinkKind {
    NEARSTREAM_ALO("nearstream-alo", DeliveryGuarantee.AT_LEAST_ONCE),
    NEARSTREAM_EO("nearstream-eo", DeliveryGuarantee.EXACTLY_ONCE),
    KAFKA_ALO("kafka-alo", DeliveryGuarantee.AT_LEAST_ONCE),
    KAFKA_EO("kafka-eo", DeliveryGuarantee.EXACTLY_ONCE),
    /** Flink's DiscardingSink: what the generator and the probe cost without a sink. */
    DISCARD("discard", DeliveryGuarantee.NONE);

    /** The four sinks of the comparison, in the order a repetition runs them. */
    public static final List<SinkKind> COMPARED =
            List.of(NEARSTREAM_ALO, NEARSTREAM_EO, KAFKA_ALO, KAFKA_EO);

    private final String label;
    private final DeliveryGuarantee guarantee;

    SinkKind(String label, DeliveryGuarantee guarantee) {
        this.label = label;
        this.guarantee = guarantee;
    }

    public String label() {
        return label;
    }

    public DeliveryGuarantee guarantee() {
        return guarantee;
    }

    public boolean nearstream() {
        return this == NEARSTREAM_ALO || this == NEARSTREAM_EO;
    }

    public boolean kafka() {
        return this == KAFKA_ALO || this == KAFKA_EO;
    }

    /** The sink of the same guarantee on the other broker (null for {@link #DISCARD}). */
    public SinkKind counterpart() {
        return switch (this) {
            case NEARSTREAM_ALO -> KAFKA_ALO;
            case NEARSTREAM_EO -> KAFKA_EO;
            case KAFKA_ALO -> NEARSTREAM_ALO;
            case KAFKA_EO -> NEARSTREAM_EO;
            case DISCARD -> null;
        };
    }

    public static SinkKind parse(String label) {
        for (SinkKind k : values()) {
            if (k.label.equals(label.trim().toLowerCase(Locale.ROOT))) {
                return k;
            }
        }
        throw new IllegalArgumentException(
                "unknown sink '"
                        + label
                        + "': nearstream-alo, nearstream-eo, kafka-alo, kafka-eo or discard");
    }

    /** A comma-separated list, in the given order, without repeats. */
    public static List<SinkKind> parseList(String list) {
        List<SinkKind> kinds = new ArrayList<>();
        for (String part : list.split(",")) {
            SinkKind k = parse(part);
            if (!kinds.contains(k)) {
                kinds.add(k);
            }
        }
        return kinds;
    }
}
