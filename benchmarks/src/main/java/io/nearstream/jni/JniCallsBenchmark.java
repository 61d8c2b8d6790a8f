package io.nearstream.jni;

import static java.util.concurrent.TimeUnit.NANOSECONDS;

import io.nearstream.benchmarks.BenchmarkBase;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The calls into {@code libnearstream_jni.so} that the push path makes while data flows, in
 * nanoseconds per call: a JNI transition alone ({@link Natives#noop()}), a futex wake with no
 * waiter (what a release costs when it finds {@code broker_waiting} set but the broker already
 * awake) and a futex wait whose word no longer holds the expected value (the system call returns at
 * once with {@code EAGAIN}, as when a slot is published between the consumer's re-check and its
 * wait).
 *
 * <p>It lives in {@code io.nearstream.jni} because {@link Natives} is package-private on purpose
 * (only the bridge's own classes call native code); the futex word is a private 64-byte Arrow
 * buffer, so no other process or thread ever waits on it.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(NANOSECONDS)
@OperationsPerInvocation(1)
public class JniCallsBenchmark extends BenchmarkBase {

    private BufferAllocator allocator;
    private ArrowBuf word;
    private long address;

    @Setup(Level.Trial)
    public void setUp() {
        allocator = new RootAllocator();
        word = allocator.buffer(64);
        word.setZero(0, 64);
        address = word.memoryAddress();
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        word.close();
        allocator.close();
    }

    @Benchmark
    public void jniNoop() {
        Natives.noop();
    }

    @Benchmark
    public int futexWakeNoWaiter() throws NativeException {
        return Natives.futexWake(address, Integer.MAX_VALUE);
    }

    @Benchmark
    public int futexWaitValueChanged() throws NativeException {
        // The word holds 0: waiting for it to hold 1 returns at once.
        int outcome = Natives.futexWait(address, 1, 1_000_000L);
        if (outcome != Natives.FUTEX_VALUE_CHANGED) {
            throw new IllegalStateException("futexWait returned " + outcome);
        }
        return outcome;
    }
}
