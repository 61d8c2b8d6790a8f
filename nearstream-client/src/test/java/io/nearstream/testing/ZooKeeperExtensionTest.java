package io.nearstream.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The real ZooKeeper of the test kit: it answers, dies when killed, and comes back. */
class ZooKeeperExtensionTest {

    @RegisterExtension static final ZooKeeperExtension ZK = new ZooKeeperExtension();

    @Test
    void answersKillsAndRestartsOnTheSamePort() throws Exception {
        int port = ZK.port();
        assertThat(ZK.connectString()).isEqualTo("127.0.0.1:" + port);
        assertThat(send(port, "ruok")).isEqualTo("imok");
        String srvr = send(port, "srvr");
        assertThat(srvr).contains("Zookeeper version: 3.9.").contains("Mode: standalone");
        // Not whitelisted: the server names the word it refuses.
        assertThat(send(port, "stat")).contains("stat is not executed");

        long pid = ZK.pid();
        Path dataDir = ZK.directory().resolve("data");
        assertThat(Files.isDirectory(dataDir.resolve("version-2"))).isTrue();

        ZK.kill();
        assertThat(ZK.isAlive()).isFalse();
        assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)).isFalse();
        assertThatThrownBy(() -> send(port, "ruok")).isInstanceOf(ConnectException.class);

        ZK.restart();
        assertThat(ZK.isAlive()).isTrue();
        assertThat(ZK.port()).isEqualTo(port);
        assertThat(ZK.pid()).isNotEqualTo(pid);
        assertThat(send(port, "ruok")).isEqualTo("imok");
        assertThat(ZK.log()).contains("binding to port");
    }

    /** A four-letter word over a plain socket; ZooKeeper answers and closes the connection. */
    private static String send(int port, String word) throws IOException {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
            socket.setSoTimeout(5_000);
            socket.getOutputStream().write(word.getBytes(StandardCharsets.US_ASCII));
            socket.getOutputStream().flush();
            ByteArrayOutputStream answer = new ByteArrayOutputStream();
            socket.getInputStream().transferTo(answer);
            return answer.toString(StandardCharsets.US_ASCII).trim();
        }
    }
}
