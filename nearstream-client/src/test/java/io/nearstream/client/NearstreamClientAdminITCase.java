package io.nearstream.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.testing.NearstreamBrokerExtension;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Admin requests against the real broker: create, describe, list, metadata, delete, errors. */
class NearstreamClientAdminITCase {

    @RegisterExtension
    static final NearstreamBrokerExtension BROKER = new NearstreamBrokerExtension();

    @Test
    void handshakeReturnsEpochThatChangesOnRestart() throws Exception {
        NearstreamClient client = BROKER.client();
        long epoch = client.handshake("admin-it").join();
        assertThat(client.handshake("admin-it").join()).isEqualTo(epoch);
    }

    @Test
    void createDescribeListMetadataDelete() {
        NearstreamClient client = BROKER.client();
        client.createStream(
                        new StreamConfig(
                                "admin.one", 3, 65536, 4, 2, Durability.ASYNC, -1, 3_600_000))
                .join();
        BROKER.createStream("admin.two", 1);

        StreamConfig described = client.describeStream("admin.one").join();
        assertThat(described)
                .isEqualTo(
                        new StreamConfig(
                                "admin.one", 3, 65536, 4, 2, Durability.ASYNC, -1, 3_600_000));
        StreamConfig defaults = client.describeStream("admin.two").join();
        assertThat(defaults.segmentBytes()).isEqualTo(8 * 1024 * 1024);
        assertThat(defaults.segmentsPerGroup()).isPositive();
        assertThat(defaults.activeGroups()).isPositive();
        assertThat(defaults.durability()).isEqualTo(Durability.NONE);

        assertThat(client.listStreams().join()).contains("admin.one", "admin.two").isSorted();

        List<StreamletMetadata> all = client.metadata("admin.one").join();
        assertThat(all).extracting(StreamletMetadata::streamlet).containsExactly(0, 1, 2);
        assertThat(all.get(0).head()).isEqualTo(Position.EARLIEST);
        List<StreamletMetadata> some = client.metadata("admin.one", 2, 0).join();
        assertThat(some).extracting(StreamletMetadata::streamlet).containsExactly(2, 0);

        client.deleteStream("admin.one").join();
        client.deleteStream("admin.two").join();
        assertThat(client.listStreams().join()).doesNotContain("admin.one", "admin.two");
    }

    @Test
    void brokerErrorsCarryTheirStatus() {
        NearstreamClient client = BROKER.client();
        BROKER.createStream("admin.errors", 2);
        assertStatus(() -> client.describeStream("admin.nope").join(), StatusCode.STREAM_NOT_FOUND);
        assertStatus(() -> client.deleteStream("admin.nope").join(), StatusCode.STREAM_NOT_FOUND);
        assertStatus(
                () -> client.createStream(StreamConfig.of("admin.errors", 2)).join(),
                StatusCode.STREAM_EXISTS);
        assertStatus(
                () -> client.createStream(StreamConfig.of("bad/name", 2)).join(),
                StatusCode.INVALID_ARGUMENT);
        assertStatus(
                () -> client.createStream(StreamConfig.of("admin.zero", 0)).join(),
                StatusCode.INVALID_ARGUMENT);
        assertStatus(
                () -> client.metadata("admin.errors", 5).join(), StatusCode.STREAMLET_NOT_FOUND);
        // The connection is still fine after errors.
        assertThat(client.describeStream("admin.errors").join().streamlets()).isEqualTo(2);
    }

    @Test
    void clientSideArgumentErrorsFailTheFutureOnly() {
        NearstreamClient client = BROKER.client();
        assertStatus(
                () -> client.describeStream("x".repeat(70_000)).join(),
                StatusCode.INVALID_ARGUMENT);
        assertThat(client.listStreams().join()).isNotNull();
    }

    @Test
    void statsHasCounters() {
        Map<String, Long> stats = BROKER.client().stats().join();
        assertThat(stats).isNotEmpty();
        assertThat(stats.keySet()).anyMatch(name -> name.startsWith("nearstream_"));
    }

    static void assertStatus(Runnable call, StatusCode status) {
        assertThatThrownBy(call::run)
                .isInstanceOf(CompletionException.class)
                .cause()
                .isInstanceOf(NearstreamClientException.class)
                .satisfies(
                        e ->
                                assertThat(((NearstreamClientException) e).status())
                                        .as(e.getMessage())
                                        .isEqualTo(status));
    }
}
