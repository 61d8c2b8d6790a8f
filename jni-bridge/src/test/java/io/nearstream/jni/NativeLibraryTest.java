package io.nearstream.jni;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NativeLibraryTest {

    @Test
    void loadsFromTheJarResourceByDefault() {
        NativeLibrary.load();
        assertThat(NativeLibrary.loadedFrom()).isNotNull();
        if (System.getProperty(NativeLibrary.LIBRARY_PROPERTY) == null) {
            assertThat(NativeLibrary.loadedFrom()).startsWith("jar:" + NativeLibrary.RESOURCE);
        }
        Natives.noop();
    }

    @Test
    void extractionWritesTheBundledLibraryToAFreshTempDir(@TempDir Path tmp) throws Exception {
        String old = System.getProperty(NativeLibrary.TMPDIR_PROPERTY);
        System.setProperty(NativeLibrary.TMPDIR_PROPERTY, tmp.toString());
        try {
            Path file = NativeLibrary.extract(NativeLibrary.RESOURCE);
            assertThat(file.getParent().getParent()).isEqualTo(tmp);
            assertThat(file.getFileName().toString()).isEqualTo("libnearstream_jni.so");
            assertThat(Files.mismatch(file, ChildJvm.builtLibrary())).isEqualTo(-1L);
        } finally {
            if (old == null) {
                System.clearProperty(NativeLibrary.TMPDIR_PROPERTY);
            } else {
                System.setProperty(NativeLibrary.TMPDIR_PROPERTY, old);
            }
        }
    }

    @Test
    void badOverridePathGivesAnActionableMessage(@TempDir Path tmp) {
        String missing = tmp.resolve("nope/libnearstream_jni.so").toString();
        assertThatThrownBy(() -> NativeLibrary.loadFrom(missing, NativeLibrary.RESOURCE))
                .isInstanceOf(UnsatisfiedLinkError.class)
                .hasMessageContaining("-D" + NativeLibrary.LIBRARY_PROPERTY + "=" + missing)
                .hasMessageContaining("Fix: set -D" + NativeLibrary.LIBRARY_PROPERTY)
                .hasMessageContaining("parent-first");
    }

    @Test
    void relativeOverridePathIsRejected() {
        assertThatThrownBy(() -> NativeLibrary.loadFrom("libnearstream_jni.so", "/x"))
                .isInstanceOf(UnsatisfiedLinkError.class)
                .hasMessageContaining("not an absolute path");
    }

    @Test
    void missingResourceSaysWhatWasTried() {
        assertThatThrownBy(() -> NativeLibrary.loadFrom(null, "/native/nowhere/libx.so"))
                .isInstanceOf(UnsatisfiedLinkError.class)
                .hasMessageContaining("extracting /native/nowhere/libx.so from the jar")
                .hasMessageContaining("not on the class path");
    }

    @Test
    void overridePropertyIsHonouredInAFreshJvm() throws Exception {
        String lib = ChildJvm.builtLibrary().toString();
        ChildJvm.Result r =
                ChildJvm.run(List.of("-D" + NativeLibrary.LIBRARY_PROPERTY + "=" + lib), "load");
        assertThat(r.exitCode).as(r.output).isZero();
        assertThat(r.output).contains("loaded " + lib);
    }

    @Test
    void badOverridePropertyFailsAFreshJvmWithTheMessage(@TempDir Path tmp) throws Exception {
        String bad = tmp.resolve("libnearstream_jni.so").toString();
        Files.writeString(tmp.resolve("libnearstream_jni.so"), "not an ELF file");
        ChildJvm.Result r =
                ChildJvm.run(List.of("-D" + NativeLibrary.LIBRARY_PROPERTY + "=" + bad), "load");
        assertThat(r.exitCode).isNotZero();
        assertThat(r.output)
                .contains("Cannot load the Nearstream JNI library")
                .contains(bad)
                .contains("parent-first");
    }
}
