package io.nearstream.flink.source.testutils;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * The push regions of one broker process in its default push directory: the broker names them
 * {@code nearstream-push-<broker pid>-<subscription id>} (docs/shm-layout.md), so tests running
 * beside other brokers see only their own.
 */
public final class PushRegions {

    /** The broker's default {@code --push-dir}. */
    public static final Path DEFAULT_DIR = Path.of("/dev/shm");

    private PushRegions() {}

    /** The region files of the broker with process id {@code brokerPid}, sorted. */
    public static List<Path> of(long brokerPid) {
        String prefix = "nearstream-push-" + brokerPid + "-";
        try (Stream<Path> files = Files.list(DEFAULT_DIR)) {
            return files.filter(p -> p.getFileName().toString().startsWith(prefix))
                    .sorted()
                    .toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Removes what a broker killed with SIGKILL left behind (it unlinks its regions only when it
     * lives to close them); a test calls this for the brokers it killed.
     */
    public static void deleteOf(long brokerPid) {
        for (Path p : of(brokerPid)) {
            try {
                Files.deleteIfExists(p);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }
}
