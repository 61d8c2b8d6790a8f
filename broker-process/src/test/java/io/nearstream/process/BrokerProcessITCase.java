package io.nearstream.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link BrokerProcess} against the real {@code nearstreamd} (system property, set by the pom). */
class BrokerProcessITCase {

    @Test
    void startsListeningAndCloseRemovesItsDirectory() throws IOException {
        Path dir;
        try (BrokerProcess broker = BrokerProcess.start(1)) {
            assertThat(broker.port()).isPositive();
            assertThat(broker.address()).isEqualTo("127.0.0.1:" + broker.port());
            assertThat(broker.isAlive()).isTrue();
            assertAccepts(broker.port());
            dir = broker.directory();
            assertThat(dir.resolve(BrokerProcess.LOG_FILE)).exists();
        }
        assertThat(dir).doesNotExist();
    }

    @Test
    void restartsOnTheSamePortInTheCallersDirectory(@TempDir Path dir) throws IOException {
        Path data = Files.createDirectories(dir.resolve("data"));
        List<String> args = List.of("--data-dir", data.toString());
        BrokerProcess first = BrokerProcess.start(dir, 0, 1, args);
        long firstPid = first.pid();
        first.kill();
        assertThat(first.isAlive()).isFalse();

        try (BrokerProcess second = BrokerProcess.start(dir, first.port(), 1, args)) {
            assertThat(second.port()).isEqualTo(first.port());
            assertThat(second.pid()).isNotEqualTo(firstPid);
            assertAccepts(second.port());
        }
        // A caller's directory outlives the process; both runs wrote to one log.
        assertThat(dir.resolve(BrokerProcess.LOG_FILE)).exists();
        assertThat(data).exists();
    }

    @Test
    void aBrokerThatExitsFailsTheStartWithItsOutput() {
        assertThatThrownBy(() -> BrokerProcess.start(1, "--no-such-flag"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("exited with status")
                .hasMessageContaining("unknown flag --no-such-flag");
    }

    private static void assertAccepts(int port) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
            assertThat(s.isConnected()).isTrue();
        }
    }
}
