package io.kvoffload;

import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * A read or write on a device, or on the store's files (manifests, pool and lock files), failed.
 * Every I/O failure of the library surfaces as this (see the "Errors" section of
 * docs/architecture.md): the message names the operation and the device or path. For a device
 * request, {@link #device()}, {@link #offset()} and {@link #length()} say where, and
 * {@link #errno()} holds the kernel's error number where one is known (else 0); for a file,
 * {@link #path()} names it where known and {@link #device()} is -1. The original
 * {@link IOException}, if any, is the cause.
 */
public class KvIoException extends KvException {
    private final int device;
    private final long offset;
    private final long length;
    private final int errno;
    private final Path path;

    public KvIoException(int device, long offset, long length, int errno, String message, Throwable cause) {
        this("I/O failed on device " + device + " at offset " + offset + ", length " + length
                + (errno != 0 ? " (errno " + errno + ")" : "") + ": " + message, device, offset, length, errno, null,
                cause);
    }

    private KvIoException(String message, int device, long offset, long length, int errno, Path path,
            Throwable cause) {
        super(message, cause);
        this.device = device;
        this.offset = offset;
        this.length = length;
        this.errno = errno;
        this.path = path;
    }

    /**
     * A file operation failed: {@code what} says which and what it left behind (e.g. "commit of
     * sequence a failed; its previous commit is intact"); the message adds the cause, which names
     * the file.
     */
    public static KvIoException of(String what, IOException cause) {
        Path path = null;
        if (cause instanceof FileSystemException fs && fs.getFile() != null) {
            try {
                path = Paths.get(fs.getFile());
            } catch (RuntimeException notAPath) {
                // the message still names it
            }
        }
        return new KvIoException(what + ": " + cause, -1, -1, 0, 0, path, cause);
    }

    /**
     * This failure as seen by a larger operation: {@code what} leads the message (e.g. "commit of
     * sequence a failed; its previous commit is intact"); device, offset, length, errno and path
     * stay, and this exception is the cause.
     */
    public KvIoException during(String what) {
        return new KvIoException(what + ": " + getMessage(), device, offset, length, errno, path, this);
    }

    /** The device the failed request went to, or -1 for a file operation. */
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

    /** The file the failed operation was on, or null when it is a device request or not known. */
    public Path path() {
        return path;
    }
}
