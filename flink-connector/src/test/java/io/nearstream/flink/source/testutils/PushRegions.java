package io.nearstream.flink.source.testutils;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * The push regions and segment files of one broker process in its default push directory: the
 * broker names them {@code nearstream-push-<broker pid>-<subscription id>} and {@code
 * nearstream-seg-<broker pid>-<n>} (docs/shm-layout.md), so tests running beside other brokers see
 * only their own.
 */
public final class PushRegions {

    /** The broker's default {@code --push-dir}. */
    public static final Path DEFAULT_DIR = Path.of("/dev/shm");

    private PushRegions() {}

    /** The region files of the broker with process id {@code brokerPid}, sorted. */
    public static List<Path> of(long brokerPid) {
        return named("nearstream-push-" + brokerPid + "-");
    }

    /** The segment files of the broker with process id {@code brokerPid}, sorted. */
    public static List<Path> segmentFilesOf(long brokerPid) {
        return named("nearstream-seg-" + brokerPid + "-");
    }

    private static List<Path> named(String prefix) {
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
        List<Path> left = new java.util.ArrayList<>(of(brokerPid));
        left.addAll(segmentFilesOf(brokerPid));
        for (Path p : left) {
            try {
                Files.deleteIfExists(p);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }
}
