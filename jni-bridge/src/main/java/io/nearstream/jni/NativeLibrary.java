package io.nearstream.jni;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

/**
 * Loads {@code libnearstream_jni.so} once per class loader, in this order:
 *
 * <ol>
 *   <li>the system property {@value #LIBRARY_PROPERTY}: an absolute path to the library, loaded
 *       with {@link System#load} as is (for development and for hosts that install it themselves);
 *   <li>otherwise the copy inside this jar, {@value #RESOURCE}: extracted to a fresh temporary
 *       directory under {@code java.io.tmpdir} (or {@value #TMPDIR_PROPERTY}), loaded, then deleted
 *       (the mapping stays valid on Linux).
 * </ol>
 *
 * When both fail the {@link UnsatisfiedLinkError} says what was tried and why.
 *
 * <p><b>One class loader per loaded library.</b> The JVM binds a native library file to the class
 * loader that loaded it and refuses to load the same path from a second one ("already loaded in
 * another classloader"). The copy from the jar is extracted to a fresh path each time, so a second
 * class loader (each Flink job, and a restarted job, gets its own user-code class loader) loads a
 * second copy, kept until that class loader is collected; the {@value #LIBRARY_PROPERTY} path is
 * fixed and loads in one class loader only. Put the jar of this module on Flink's
 * <em>parent-first</em> class path ({@code lib/} of the distribution) so every job and every
 * restart shares one loaded copy: docs/flink-connector.md, "Where the jars go".
 */
public final class NativeLibrary {
    /** System property: absolute path of a {@code libnearstream_jni.so} to load instead. */
    public static final String LIBRARY_PROPERTY = "nearstream.jni.library";

    /** System property: directory to extract the bundled library into (default: java.io.tmpdir). */
    public static final String TMPDIR_PROPERTY = "nearstream.jni.tmpdir";

    /** Where the library lies inside the jar. */
    public static final String RESOURCE = "/native/linux-x86_64/libnearstream_jni.so";

    private static final String PARENT_FIRST_HINT =
            "The nearstream-jni-bridge jar belongs on Flink's parent-first class path (lib/ of the"
                    + " distribution, or classloader.parent-first-patterns.additional:"
                    + " io.nearstream.jni): a JNI library can be loaded by one class loader only.";

    private static volatile String loadedFrom;

    private NativeLibrary() {}

    /**
     * Loads the library unless this class loader has already done so.
     *
     * @throws UnsatisfiedLinkError with everything that was tried when it cannot be loaded
     */
    public static void load() {
        if (loadedFrom != null) {
            return;
        }
        synchronized (NativeLibrary.class) {
            if (loadedFrom == null) {
                loadedFrom = loadFrom(System.getProperty(LIBRARY_PROPERTY), RESOURCE);
            }
        }
    }

    /** Where the library was loaded from, or {@code null} before {@link #load()}. */
    public static String loadedFrom() {
        return loadedFrom;
    }

    /**
     * One load attempt: the override path if given, else the resource. Package-private so that
     * tests can drive failures without touching the process-wide state.
     *
     * @return a description of what was loaded
     */
    static String loadFrom(String overridePath, String resource) {
        List<String> tried = new ArrayList<>();
        if (overridePath != null && !overridePath.isEmpty()) {
            Path path = Paths.get(overridePath);
            if (!path.isAbsolute()) {
                throw failure(
                        tried,
                        "-D" + LIBRARY_PROPERTY + "=" + overridePath + ": not an absolute path",
                        null);
            }
            try {
                System.load(overridePath);
                return overridePath;
            } catch (UnsatisfiedLinkError e) {
                throw failure(
                        tried,
                        "-D" + LIBRARY_PROPERTY + "=" + overridePath + ": " + e.getMessage(),
                        e);
            }
        }
        Path extracted;
        try {
            extracted = extract(resource);
        } catch (IOException e) {
            throw failure(tried, "extracting " + resource + " from the jar: " + e.getMessage(), e);
        }
        try {
            System.load(extracted.toString());
            return "jar:" + resource + " (extracted to " + extracted + ")";
        } catch (UnsatisfiedLinkError e) {
            throw failure(tried, "System.load(" + extracted + "): " + e.getMessage(), e);
        } finally {
            deleteQuietly(extracted);
        }
    }

    /**
     * Copies {@code resource} from the class path into a new temporary directory.
     *
     * @return the extracted file; the caller deletes it (and its directory) after loading
     */
    static Path extract(String resource) throws IOException {
        String os = System.getProperty("os.name", "");
        String arch = System.getProperty("os.arch", "");
        try (InputStream in = NativeLibrary.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IOException(
                        "not on the class path (this jar carries linux-x86_64 only; running on "
                                + os
                                + "/"
                                + arch
                                + ")");
            }
            String tmp = System.getProperty(TMPDIR_PROPERTY);
            Path dir =
                    tmp == null
                            ? Files.createTempDirectory("nearstream-jni-")
                            : Files.createTempDirectory(Paths.get(tmp), "nearstream-jni-");
            Path file = dir.resolve(Paths.get(resource).getFileName().toString());
            try {
                Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            } catch (IOException e) {
                deleteQuietly(file);
                throw e;
            }
            return file;
        }
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
            Path dir = file.getParent();
            if (dir != null && dir.getFileName().toString().startsWith("nearstream-jni-")) {
                Files.deleteIfExists(dir);
            }
        } catch (IOException ignored) {
            // A leftover in the temp dir is harmless; the load result is what matters.
        }
    }

    private static UnsatisfiedLinkError failure(List<String> tried, String attempt, Throwable e) {
        tried.add(attempt);
        StringBuilder msg =
                new StringBuilder("Cannot load the Nearstream JNI library libnearstream_jni.so.");
        msg.append(" Tried:");
        for (String t : tried) {
            msg.append("\n  - ").append(t);
        }
        msg.append("\nFix: set -D")
                .append(LIBRARY_PROPERTY)
                .append(
                        "=/absolute/path/libnearstream_jni.so, or use the nearstream-jni-bridge"
                                + " jar built for linux-x86_64 (it carries ")
                .append(RESOURCE)
                .append(") with a writable java.io.tmpdir (or -D")
                .append(TMPDIR_PROPERTY)
                .append(").");
        if (e != null && e.getMessage() != null && e.getMessage().contains("another classloader")) {
            msg.append("\n").append(PARENT_FIRST_HINT);
        } else {
            msg.append("\nNote: ").append(PARENT_FIRST_HINT);
        }
        UnsatisfiedLinkError error = new UnsatisfiedLinkError(msg.toString());
        if (e != null) {
            error.initCause(e);
        }
        return error;
    }
}
