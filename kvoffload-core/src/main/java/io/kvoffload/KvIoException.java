package io.kvoffload;

/**
 * A read or write on a device failed. The message names the device, the file offset and the
 * length; {@link #errno()} holds the kernel's error number where one is known (else 0).
 */
public class KvIoException extends KvException {
    private final int device;
    private final long offset;
    private final long length;
    private final int errno;

    public KvIoException(int device, long offset, long length, int errno, String message, Throwable cause) {
        super("I/O failed on device " + device + " at offset " + offset + ", length " + length
                + (errno != 0 ? " (errno " + errno + ")" : "") + ": " + message, cause);
        this.device = device;
        this.offset = offset;
        this.length = length;
        this.errno = errno;
    }

    public int device() {
        return device;
    }

    public long offset() {
        return offset;
    }

    public long length() {
        return length;
    }

    public int errno() {
        return errno;
    }
}
