package io.nearstream.jni;

import java.io.IOException;

/**
 * A failed system call in the JNI library: the operation that failed, the {@code errno} it set and
 * the C library's text for it. Thrown by every native entry point instead of returning an error
 * code; the native side creates it through a constructor reference cached in {@code JNI_OnLoad}.
 */
public final class NativeException extends IOException {
    private static final long serialVersionUID = 1L;

    private final String operation;
    private final int errno;

    /** Called from C: {@code (Ljava/lang/String;ILjava/lang/String;)V}. */
    public NativeException(String operation, int errno, String detail) {
        super(operation + " failed: errno " + errno + " (" + detail + ")");
        this.operation = operation;
        this.errno = errno;
    }

    /** The failed operation, with its arguments where useful, e.g. {@code open(/dev/shm/x)}. */
    public String operation() {
        return operation;
    }

    /** The {@code errno} value the system call left, 0 when the failure was a checked argument. */
    public int errno() {
        return errno;
    }
}
