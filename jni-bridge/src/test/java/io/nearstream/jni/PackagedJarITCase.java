package io.nearstream.jni;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;

/** The packaged jar carries the library, and a JVM with only that jar extracts and loads it. */
class PackagedJarITCase {

    private static Path jar() {
        return Paths.get(System.getProperty("nearstream.jni.test.jar"));
    }

    @Test
    void jarCarriesTheLinuxLibrary() throws Exception {
        try (JarFile jar = new JarFile(jar().toFile())) {
            assertThat(jar.getEntry(NativeLibrary.RESOURCE.substring(1))).isNotNull();
        }
    }

    @Test
    void aJvmWithTheJarExtractsAndLoadsIt() throws Exception {
        String testClasses =
                Paths.get(
                                ChildJvm.class
                                        .getProtectionDomain()
                                        .getCodeSource()
                                        .getLocation()
                                        .toURI())
                        .toString();
        String cp = jar() + File.pathSeparator + testClasses;
        Path tmp = Files.createTempDirectory("nearstream-jni-it-");
        Process p =
                new ProcessBuilder(
                                Paths.get(System.getProperty("java.home"), "bin", "java")
                                        .toString(),
                                "-cp",
                                cp,
                                "-D" + NativeLibrary.TMPDIR_PROPERTY + "=" + tmp,
                                ChildJvm.class.getName(),
                                "load")
                        .redirectErrorStream(true)
                        .start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        String out = new String(p.getInputStream().readAllBytes());
        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out).contains("loaded jar:" + NativeLibrary.RESOURCE).contains(tmp.toString());
        // The extracted copy is deleted once loaded.
        try (var left = Files.list(tmp)) {
            assertThat(left).isEmpty();
        }
        Files.delete(tmp);
    }
}
