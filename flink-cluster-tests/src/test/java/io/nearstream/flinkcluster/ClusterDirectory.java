package io.nearstream.flinkcluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * Cleaning up a cluster directory from Java: the last resort when {@code flink-cluster.sh stop}
 * could not run, and the removal of the directory.
 */
final class ClusterDirectory {

    private ClusterDirectory() {}

    /** SIGKILL to every process a pid file of {@code clusterDir} names that is still ours. */
    static void killProcesses(Path clusterDir) {
        try (Stream<Path> files = Files.list(clusterDir)) {
            for (Path f : files.filter(f -> f.toString().endsWith(".pid")).toList()) {
                try {
                    long pid = Long.parseLong(Files.readString(f).strip());
                    ProcessHandle.of(pid)
                            .filter(p -> isOurs(p, clusterDir))
                            .ifPresent(ProcessHandle::destroyForcibly);
                } catch (IOException | NumberFormatException e) {
                    // an unreadable pid file names nothing to kill
                }
            }
        } catch (IOException e) {
            // no directory: nothing was started
        }
    }

    /** A pid file may name a reused pid: only a JVM given this directory's conf/ is ours. */
    private static boolean isOurs(ProcessHandle p, Path clusterDir) {
        String conf = clusterDir.resolve("conf").toString();
        return p.info().arguments().stream().flatMap(Arrays::stream).anyMatch(conf::equals);
    }

    static void delete(Path root) {
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot remove " + root, e);
        }
    }

    /**
     * {@link #delete} when the JVM is ending: a leftover temporary directory is all that is lost.
     */
    static void deleteQuietly(Path root) {
        try {
            delete(root);
        } catch (UncheckedIOException e) {
            System.err.println(e.getMessage());
        }
    }
}
