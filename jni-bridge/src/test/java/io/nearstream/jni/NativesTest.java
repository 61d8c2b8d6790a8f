package io.nearstream.jni;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.RandomAccessFile;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NativesTest {
    private static final VarHandle INT =
            MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
    private static final int PAGE = 4096;

    static Path newFile(Path dir, String name, long length) throws Exception {
        Path file = dir.resolve(name);
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(length);
        }
        return file;
    }

    @Test
    void mapsAFileSharedAndUnmapsIt(@TempDir Path tmp) throws Exception {
        Path file = newFile(tmp, "region", 2 * PAGE);
        long address = Natives.mapRegion(file.toString(), 2 * PAGE);
        assertThat(address % PAGE).isZero();
        ByteBuffer buf = Natives.directBuffer(address, 2 * PAGE).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(buf.isDirect()).isTrue();
        assertThat(buf.capacity()).isEqualTo(2 * PAGE);
        buf.putLong(PAGE + 8, 0x1122334455667788L);
        Natives.unmapRegion(address, 2 * PAGE);
        // MAP_SHARED: the store reached the file.
        ByteBuffer back = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(back.getLong(PAGE + 8)).isEqualTo(0x1122334455667788L);
    }

    @Test
    void mapsAFileInDevShm() throws Exception {
        Path shm = Paths.get("/dev/shm");
        assumeTrue(Files.isDirectory(shm) && Files.isWritable(shm), "/dev/shm not writable");
        Path file = Files.createTempFile(shm, "nearstream-jni-test-", ".region");
        try {
            try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
                raf.setLength(PAGE);
            }
            long address = Natives.mapRegion(file.toString(), PAGE);
            Natives.directBuffer(address, PAGE).putInt(0, 42);
            Natives.unmapRegion(address, PAGE);
        } finally {
            Files.deleteIfExists(file);
        }
    }

    @Test
    void mapFailuresCarryErrnoAndTheOperation(@TempDir Path tmp) throws Exception {
        String missing = tmp.resolve("missing").toString();
        assertThatThrownBy(() -> Natives.mapRegion(missing, PAGE))
                .isInstanceOfSatisfying(
                        NativeException.class,
                        e -> {
                            assertThat(e.errno()).isEqualTo(2); // ENOENT
                            assertThat(e.operation()).contains("open(" + missing);
                        })
                .hasMessageContaining("errno 2");

        Path small = newFile(tmp, "small", 100);
        assertThatThrownBy(() -> Natives.mapRegion(small.toString(), PAGE))
                .isInstanceOfSatisfying(
                        NativeException.class, e -> assertThat(e.errno()).isEqualTo(22))
                .hasMessageContaining("file has 100 bytes");

        assertThatThrownBy(() -> Natives.futexWait(3, 0, 0))
                .isInstanceOf(NativeException.class)
                .hasMessageContaining("aligned");
    }

    @Test
    void futexWaitTimesOutAndSeesChangedValues(@TempDir Path tmp) throws Exception {
        Path file = newFile(tmp, "futex", PAGE);
        long address = Natives.mapRegion(file.toString(), PAGE);
        try {
            long start = System.nanoTime();
            assertThat(Natives.futexWait(address, 0, TimeUnit.MILLISECONDS.toNanos(20)))
                    .isEqualTo(Natives.FUTEX_TIMED_OUT);
            assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(15_000_000L);
            assertThat(Natives.futexWait(address, 7, 1_000_000_000L))
                    .isEqualTo(Natives.FUTEX_VALUE_CHANGED);
            assertThat(Natives.futexWake(address, 1)).isZero();
        } finally {
            Natives.unmapRegion(address, PAGE);
        }
    }

    @Test
    void futexWakeAcrossThreads(@TempDir Path tmp) throws Exception {
        Path file = newFile(tmp, "futex", PAGE);
        long address = Natives.mapRegion(file.toString(), PAGE);
        ByteBuffer buf = Natives.directBuffer(address, PAGE);
        try {
            AtomicInteger result = new AtomicInteger(-1);
            CountDownLatch started = new CountDownLatch(1);
            Thread waiter =
                    new Thread(
                            () -> {
                                started.countDown();
                                try {
                                    int r = Natives.FUTEX_WOKEN;
                                    while ((int) INT.getAcquire(buf, 64) == 0) {
                                        r = Natives.futexWait(address + 64, 0, 10_000_000_000L);
                                    }
                                    result.set(r);
                                } catch (NativeException e) {
                                    result.set(-2);
                                }
                            });
            waiter.start();
            started.await();
            Thread.sleep(50);
            INT.setRelease(buf, 64, 1);
            Natives.futexWake(address + 64, Integer.MAX_VALUE);
            waiter.join(10_000);
            assertThat(waiter.isAlive()).isFalse();
            assertThat(result.get()).isIn(Natives.FUTEX_WOKEN, Natives.FUTEX_VALUE_CHANGED);
        } finally {
            Natives.unmapRegion(address, PAGE);
        }
    }

    @Test
    void futexWakeAcrossProcesses(@TempDir Path tmp) throws Exception {
        Path file = newFile(tmp, "futex", PAGE);
        long address = Natives.mapRegion(file.toString(), PAGE);
        ByteBuffer buf = Natives.directBuffer(address, PAGE);
        try {
            Process child = ChildJvm.start(List.of(), "wake", file.toString(), "128");
            int r = Natives.FUTEX_VALUE_CHANGED;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while ((int) INT.getAcquire(buf, 128) == 0 && System.nanoTime() < deadline) {
                r = Natives.futexWait(address + 128, 0, TimeUnit.SECONDS.toNanos(60));
            }
            assertThat((int) INT.getAcquire(buf, 128)).isEqualTo(1);
            assertThat(child.waitFor(60, TimeUnit.SECONDS)).isTrue();
            String out;
            try (BufferedReader in =
                    new BufferedReader(
                            new InputStreamReader(
                                    child.getInputStream(), StandardCharsets.UTF_8))) {
                out = in.lines().reduce("", (a, b) -> a + b + "\n");
            }
            assertThat(child.exitValue()).as(out).isZero();
            // Woken by the child (1 waiter woken) unless the store came before we slept.
            if (r == Natives.FUTEX_WOKEN) {
                assertThat(out).contains("woken 1");
            }
        } finally {
            Natives.unmapRegion(address, PAGE);
        }
    }
}
