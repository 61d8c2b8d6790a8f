package io.nearstream.flink.source;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nearstream.client.NearstreamClientException;
import io.nearstream.client.StatusCode;
import java.io.IOException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

/** The one classification of broker and transport failures, by the protocol's table. */
class BrokerErrorsTest {

    @Test
    void retriableFailuresComeBackAsIOExceptions() {
        IOException shutting =
                BrokerErrors.failure(
                        "Fetch",
                        new CompletionException(
                                new NearstreamClientException(StatusCode.SHUTTING_DOWN, "bye")));
        assertThat(shutting).hasMessageContaining("retriable SHUTTING_DOWN");
        assertThat(BrokerErrors.failure("Fetch", new TimeoutException("slow")))
                .hasMessageContaining("retriable IO_ERROR");
        assertThat(BrokerErrors.failure("Fetch of streamlet 3", StatusCode.STORAGE_ERROR, "full"))
                .hasMessage("Fetch of streamlet 3 failed with STORAGE_ERROR: full");
    }

    @Test
    void fatalFailuresAreThrownAsNearstreamExceptionsWithTheirStatus() {
        assertThatThrownBy(
                        () ->
                                BrokerErrors.failure(
                                        "Fetch",
                                        new NearstreamClientException(
                                                StatusCode.STREAM_NOT_FOUND, "no 's'")))
                .isInstanceOfSatisfying(
                        NearstreamException.class,
                        e -> assertThat(e.status()).contains(StatusCode.STREAM_NOT_FOUND))
                .hasMessageContaining("no 's'");
        assertThatThrownBy(
                        () ->
                                BrokerErrors.failure(
                                        "Fetch of streamlet 1",
                                        StatusCode.POSITION_OUT_OF_RANGE,
                                        "gone"))
                .isInstanceOf(NearstreamException.class)
                .hasMessageContaining("removed by retention");
    }

    @Test
    void fatalNamesTheOptionThatSkipsDamagedData() {
        NearstreamException e =
                BrokerErrors.fatal("Reading streamlet 0", StatusCode.DATA_LOSS, "1:2:0 to 1:2:9");
        assertThat(e.status()).contains(StatusCode.DATA_LOSS);
        assertThat(e)
                .hasMessageStartingWith("Reading streamlet 0 failed with DATA_LOSS: 1:2:0 to 1:2:9")
                .hasMessageContaining(NearstreamSourceOptions.SKIP_DAMAGED_DATA.key());
    }

    @Test
    void aNearstreamExceptionStaysWhatItIs() {
        NearstreamException original = new NearstreamException("already classified");
        assertThat(BrokerErrors.fatal("Discovery", new CompletionException(original)))
                .isSameAs(original);
        assertThat(BrokerErrors.isRetriable(original)).isFalse();
        assertThat(BrokerErrors.isRetriable(new IOException("reset"))).isTrue();
    }
}
