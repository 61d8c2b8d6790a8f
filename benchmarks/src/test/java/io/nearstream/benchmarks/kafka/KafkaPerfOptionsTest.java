package io.nearstream.benchmarks.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The command line of {@link KafkaProducerPerf}. */
class KafkaPerfOptionsTest {

    @Test
    void defaultsFollowNearstreamPerfAndKafka() {
        KafkaPerfOptions o = KafkaPerfOptions.parse("--broker", "127.0.0.1:9092", "--topic", "t");
        assertThat(o.producers()).isEqualTo(1);
        assertThat(o.partitions()).isZero();
        assertThat(o.chunkBytes()).isEqualTo(16 * 1024);
        assertThat(o.recordBytes()).isEqualTo(100);
        assertThat(o.lingerMs()).isEqualTo(5);
        assertThat(o.acks()).isEqualTo("1");
        assertThat(o.durationSeconds()).isEqualTo(10);
        assertThat(o.countsRecords()).isFalse();
    }

    @Test
    void parsesEveryFlagWithSizeSuffixesAndEqualsForm() {
        KafkaPerfOptions o =
                KafkaPerfOptions.parse(
                        "--broker=127.0.0.1:9092",
                        "--topic",
                        "bench",
                        "--create",
                        "--producers",
                        "2",
                        "--partitions",
                        "4",
                        "--chunk-size",
                        "64K",
                        "--record-size",
                        "1k",
                        "--linger-ms",
                        "0",
                        "--acks",
                        "ALL",
                        "--inflight",
                        "1",
                        "--compression",
                        "lz4",
                        "--rate",
                        "100000",
                        "--records",
                        "5000000");
        assertThat(o.create()).isTrue();
        assertThat(o.producers()).isEqualTo(2);
        assertThat(o.partitions()).isEqualTo(4);
        assertThat(o.chunkBytes()).isEqualTo(65536);
        assertThat(o.recordBytes()).isEqualTo(1024);
        assertThat(o.lingerMs()).isZero();
        assertThat(o.acks()).isEqualTo("all");
        assertThat(o.inflight()).isEqualTo(1);
        assertThat(o.compression()).isEqualTo("lz4");
        assertThat(o.rate()).isEqualTo(100_000);
        assertThat(o.records()).isEqualTo(5_000_000);
        assertThat(o.countsRecords()).isTrue();
    }

    @Test
    void createWithoutPartitionsMakesOne() {
        assertThat(
                        KafkaPerfOptions.parse("--broker", "b:1", "--topic", "t", "--create")
                                .partitions())
                .isEqualTo(1);
    }

    @Test
    void helpAsksForUsage() {
        assertThat(KafkaPerfOptions.parse("--help")).isNull();
    }

    @Test
    void badInputIsExplained() {
        assertThatThrownBy(() -> KafkaPerfOptions.parse("--topic", "t"))
                .hasMessageContaining("--broker is required");
        assertThatThrownBy(() -> KafkaPerfOptions.parse("--broker", "b:1", "--topic", "t", "--x"))
                .hasMessageContaining("unknown flag --x");
        assertThatThrownBy(() -> KafkaPerfOptions.parse("--broker", "b:1", "--topic"))
                .hasMessageContaining("--topic needs a value");
        assertThatThrownBy(
                        () ->
                                KafkaPerfOptions.parse(
                                        "--broker", "b:1", "--topic", "t", "--acks", "2"))
                .hasMessageContaining("--acks must be 0, 1 or all");
        assertThatThrownBy(
                        () ->
                                KafkaPerfOptions.parse(
                                        "--broker", "b:1", "--topic", "t", "--chunk-size", "big"))
                .hasMessageContaining("byte count");
        assertThatThrownBy(
                        () ->
                                KafkaPerfOptions.parse(
                                        "--broker",
                                        "b:1",
                                        "--topic",
                                        "t",
                                        "--records",
                                        "5",
                                        "--duration-s",
                                        "3"))
                .hasMessageContaining("not both");
        assertThatThrownBy(
                        () ->
                                KafkaPerfOptions.parse(
                                        "--broker", "b:1", "--topic", "t", "--producers", "0"))
                .hasMessageContaining("--producers must be 1..1024");
        assertThatThrownBy(() -> KafkaPerfOptions.parse("--broker", "b:1", "--topic", "t", "x"))
                .hasMessageContaining("unexpected argument");
    }

    @Test
    void producersShareThePartitions() {
        assertThat(KafkaPerfProducer.share(0, 2, 4)).containsExactly(0, 2);
        assertThat(KafkaPerfProducer.share(1, 2, 4)).containsExactly(1, 3);
        assertThat(KafkaPerfProducer.share(0, 1, 3)).containsExactly(0, 1, 2);
        // More producers than partitions: several write the same one.
        assertThat(KafkaPerfProducer.share(3, 4, 2)).containsExactly(1);
    }

    @Test
    void medianLeavesOutTheFirstAndLastSecond() {
        assertThat(KafkaProducerPerf.median(List.of(1.0, 10.0, 20.0, 30.0, 1000.0)))
                .isEqualTo(20.0);
        assertThat(KafkaProducerPerf.median(List.of(4.0, 8.0))).isEqualTo(6.0);
        assertThat(KafkaProducerPerf.median(List.of())).isNaN();
    }

    @Test
    void recordsCarryTheirIndexAndTheFixedPattern() {
        byte[] template = IndexedRecords.template(100);
        byte[] record = template.clone();
        IndexedRecords.stamp(record, 123_456_789L);
        assertThat(IndexedRecords.index(record)).isEqualTo(123_456_789L);
        assertThat(IndexedRecords.matches(record, 123_456_789L, template)).isTrue();
        assertThat(IndexedRecords.matches(record, 123_456_788L, template)).isFalse();
        record[50] ^= 1;
        assertThat(IndexedRecords.matches(record, 123_456_789L, template)).isFalse();
    }
}
