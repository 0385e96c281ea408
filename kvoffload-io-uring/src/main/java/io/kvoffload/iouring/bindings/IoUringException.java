package io.kvoffload.iouring.bindings;

import java.io.IOException;

/** A liburing or libc call failed; carries the errno (positive) it reported. */
public final class IoUringException extends IOException {
    private static final long serialVersionUID = 1L;

    private final int errno;

    public IoUringException(String call, int errno) {
        super(call + " failed: " + Posix.describe(errno));
        this.errno = errno;
    }

    public int errno() {
        return errno;
    }
}
