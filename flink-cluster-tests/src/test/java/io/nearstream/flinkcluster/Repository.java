package io.nearstream.flinkcluster;

import java.nio.file.Files;
import java.nio.file.Path;

/** Paths in the repository and in the build that the tests use, from the pom's properties. */
final class Repository {

    private Repository() {}

    /**
     * The repository root ({@code nearstream.repo.root}, else found from the working directory).
     */
    static Path root() {
        String configured = System.getProperty("nearstream.repo.root");
        if (configured != null && !configured.isBlank()) {
            return Path.of(configured).toAbsolutePath().normalize();
        }
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            if (Files.exists(dir.resolve("scripts/flink-cluster.sh"))) {
                return dir;
            }
        }
        throw new IllegalStateException(
                "repository root not found: set -Dnearstream.repo.root or run from the repository");
    }

    /** A file of the repository, which must exist. */
    static Path file(String relative) {
        Path path = root().resolve(relative);
        if (!Files.exists(path)) {
            throw new IllegalStateException(path + " does not exist");
        }
        return path;
    }

    /**
     * A directory the build made, named by a system property the pom sets; {@code hint} says how to
     * make it when it is missing.
     */
    static Path buildOutput(String property, String fallback, String hint) {
        String configured = System.getProperty(property);
        Path dir =
                configured != null && !configured.isBlank()
                        ? Path.of(configured)
                        : root().resolve(fallback);
        if (!Files.isDirectory(dir)) {
            throw new IllegalStateException(dir + " does not exist: " + hint);
        }
        return dir.toAbsolutePath().normalize();
    }
}
