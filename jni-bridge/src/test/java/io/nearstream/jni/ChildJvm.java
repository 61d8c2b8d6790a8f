package io.nearstream.jni;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The main class of a second JVM started by tests: {@code load} prints where the library came from;
 * {@code wake PATH OFFSET} maps PATH, stores 1 at OFFSET (release) and futex-wakes it.
 */
public final class ChildJvm {
    private static final VarHandle INT =
            MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

    private ChildJvm() {}

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "load":
                NativeLibrary.load();
                System.out.println("loaded " + NativeLibrary.loadedFrom());
                Natives.noop();
                break;
            case "wake":
                {
                    long length = Files.size(Paths.get(args[1]));
                    int offset = Integer.parseInt(args[2]);
                    long address = Natives.mapRegion(args[1], length);
                    ByteBuffer buf = Natives.directBuffer(address, length);
                    INT.setRelease(buf, offset, 1);
                    int woken = Natives.futexWake(address + offset, 1);
                    System.out.println("woken " + woken);
                    Natives.unmapRegion(address, length);
                    break;
                }
            default:
                throw new IllegalArgumentException(args[0]);
        }
    }

    /** The result of a finished child JVM. */
    static final class Result {
        final int exitCode;
        final String output;

        Result(int exitCode, String output) {
            this.exitCode = exitCode;
            this.output = output;
        }
    }

    /** Starts {@code java ChildJvm args} with the test class path and extra {@code -D} options. */
    static Process start(List<String> jvmOptions, String... args) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.addAll(jvmOptions);
        cmd.add(ChildJvm.class.getName());
        for (String a : args) {
            cmd.add(a);
        }
        return new ProcessBuilder(cmd).redirectErrorStream(true).start();
    }

    static Result run(List<String> jvmOptions, String... args)
            throws IOException, InterruptedException {
        Process p = start(jvmOptions, args);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException("child JVM did not finish in 60 s");
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        return new Result(p.exitValue(), out);
    }

    static Path builtLibrary() {
        return Paths.get(System.getProperty("nearstream.jni.test.built"));
    }
}
