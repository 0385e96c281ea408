package io.kvoffload.iouring.bindings;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/**
 * Safe wrappers over {@link libc_h}: they take Java values, keep every native address inside this
 * package, and return {@code -errno} on failure the way liburing does, so callers handle both the
 * same way.
 */
@SuppressWarnings("restricted") // the bindings package is where native access is allowed
public final class Posix {
    private Posix() {}

    /**
     * open(2) of {@code path}.
     *
     * @return the file descriptor, or {@code -errno}
     */
    public static int open(Path path, int flags, int mode) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = libc_h.allocateErrno(arena);
            int fd = libc_h.open(state, arena.allocateFrom(path.toString()), flags, mode);
            return fd >= 0 ? fd : -libc_h.errno(state);
        }
    }

    /** close(2); returns 0 or {@code -errno}. */
    public static int close(int fd) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = libc_h.allocateErrno(arena);
            return libc_h.close(state, fd) == 0 ? 0 : -libc_h.errno(state);
        }
    }

    /** fdatasync(2); returns 0 or {@code -errno}. */
    public static int fdatasync(int fd) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = libc_h.allocateErrno(arena);
            return libc_h.fdatasync(state, fd) == 0 ? 0 : -libc_h.errno(state);
        }
    }

    /** The soft RLIMIT_MEMLOCK in bytes, {@link Long#MAX_VALUE} when unlimited, or -1 if unknown. */
    public static long memlockLimit() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment rl = rlimit.allocate(arena);
            if (libc_h.getrlimit(libc_h.RLIMIT_MEMLOCK, rl) != 0) {
                return -1;
            }
            long cur = rlimit.rlim_cur(rl);
            return cur == libc_h.RLIM_INFINITY ? Long.MAX_VALUE : cur;
        }
    }

    /**
     * A strerror-like description of {@code errno}: its symbolic name and glibc's text, e.g.
     * {@code "EBADF (Bad file descriptor)"}. Allocates; meant for failure paths only.
     */
    public static String describe(int errno) {
        String text;
        try {
            MemorySegment s = libc_h.strerror(errno);
            text = s.equals(MemorySegment.NULL) ? "unknown error" : s.reinterpret(256).getString(0);
        } catch (RuntimeException | LinkageError e) {
            text = "error " + errno;
        }
        String name = errnoName(errno);
        return name == null ? text + " (errno " + errno + ")" : name + " (" + text + ")";
    }

    /** The symbolic name of the errno values an I/O path can produce, or null. */
    public static String errnoName(int errno) {
        return switch (errno) {
            case libc_h.EPERM -> "EPERM";
            case libc_h.ENOENT -> "ENOENT";
            case libc_h.EINTR -> "EINTR";
            case libc_h.EIO -> "EIO";
            case 6 -> "ENXIO";
            case libc_h.EBADF -> "EBADF";
            case libc_h.EAGAIN -> "EAGAIN";
            case libc_h.ENOMEM -> "ENOMEM";
            case 13 -> "EACCES";
            case libc_h.EFAULT -> "EFAULT";
            case libc_h.EBUSY -> "EBUSY";
            case 17 -> "EEXIST";
            case 19 -> "ENODEV";
            case 21 -> "EISDIR";
            case libc_h.EINVAL -> "EINVAL";
            case 24 -> "EMFILE";
            case 27 -> "EFBIG";
            case libc_h.ENOSPC -> "ENOSPC";
            case 29 -> "ESPIPE";
            case 30 -> "EROFS";
            case libc_h.ENOSYS -> "ENOSYS";
            case 61 -> "ENODATA";
            case libc_h.EOVERFLOW -> "EOVERFLOW";
            case libc_h.EOPNOTSUPP -> "EOPNOTSUPP";
            case 117 -> "EUCLEAN";
            case 122 -> "EDQUOT";
            case libc_h.ECANCELED -> "ECANCELED";
            default -> null;
        };
    }
}
