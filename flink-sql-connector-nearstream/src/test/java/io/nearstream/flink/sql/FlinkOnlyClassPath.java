package io.nearstream.flink.sql;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.ZipFile;

/**
 * The test JVM's class path without anything the shaded jar bundles: what is left is Flink, its
 * formats and their dependencies, as in Flink's {@code lib/}. A JVM given this plus the shaded jar
 * can only find the connector, Netty and Arrow inside the shaded jar.
 */
final class FlinkOnlyClassPath {

    /**
     * Packages of the Nearstream artifacts and of the libraries the shaded jar holds relocated. A
     * jar with any of them is left out, whatever it is called: a Nearstream jar of the reactor or
     * of ~/.m2, the test kit, unshaded Netty or Arrow or Arrow's dependencies.
     */
    private static final List<String> BUNDLED_PACKAGES =
            List.of(
                    "io/nearstream/",
                    "io/netty/",
                    "org/apache/arrow/",
                    "com/fasterxml/jackson/",
                    "com/google/flatbuffers/",
                    "org/apache/commons/codec/");

    private final List<Path> kept = new ArrayList<>();
    private final List<Path> left = new ArrayList<>();

    private FlinkOnlyClassPath() {}

    /** Splits {@code java.class.path} of this JVM. */
    static FlinkOnlyClassPath ofThisJvm() {
        FlinkOnlyClassPath classPath = new FlinkOnlyClassPath();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (entry.isEmpty()) {
                continue;
            }
            Path path = Path.of(entry);
            // Directories are the build outputs of Nearstream modules (target/classes,
            // target/test-classes); Flink comes as jars only.
            if (Files.isRegularFile(path) && !holdsABundledPackage(path)) {
                classPath.kept.add(path);
            } else {
                classPath.left.add(path);
            }
        }
        return classPath;
    }

    /** The entries a child JVM gets. */
    List<Path> kept() {
        return kept;
    }

    /** The entries left out, for a failure message. */
    List<Path> leftOut() {
        return left;
    }

    private static boolean holdsABundledPackage(Path jar) {
        try (ZipFile zip = new ZipFile(jar.toFile())) {
            return zip.stream()
                    .anyMatch(
                            e ->
                                    BUNDLED_PACKAGES.stream()
                                            .anyMatch(p -> e.getName().startsWith(p)));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + jar, e);
        }
    }
}
