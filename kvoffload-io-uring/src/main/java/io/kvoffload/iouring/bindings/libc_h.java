package io.kvoffload.iouring.bindings;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * The few glibc functions the backend needs, in jextract's shape for {@code <fcntl.h>},
 * {@code <unistd.h>}, {@code <string.h>} and {@code <sys/resource.h>}: open(2) with O_DIRECT (which
 * {@code FileChannel} cannot hand over as a raw descriptor), close(2), fdatasync(2), strerror(3)
 * and getrlimit(2).
 *
 * <p>Calls that report failure through {@code errno} take a capture-state segment first (allocate
 * it with {@link #allocateErrno}); jextract emits the same through {@code Linker.Option.captureCallState}.
 * open(2) is variadic; jextract emits an invoker factory for it, here the one shape we call
 * ({@code path, flags, mode}) is linked directly with {@code firstVariadicArg(2)}.
 */
@SuppressWarnings({"unused", "restricted", "checkstyle:TypeName"})
public final class libc_h {
    private libc_h() {}

    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();

    // <fcntl.h> / <asm-generic/fcntl.h> on x86_64
    public static final int O_RDONLY = 0;
    public static final int O_WRONLY = 01;
    public static final int O_RDWR = 02;
    public static final int O_DIRECT = 040000;
    public static final int O_CLOEXEC = 02000000;
    // <sys/resource.h>
    public static final int RLIMIT_MEMLOCK = 8;
    public static final long RLIM_INFINITY = -1L;

    // <asm-generic/errno-base.h> / <asm-generic/errno.h>
    public static final int EPERM = 1;
    public static final int ENOENT = 2;
    public static final int EINTR = 4;
    public static final int EIO = 5;
    public static final int EBADF = 9;
    public static final int EAGAIN = 11;
    public static final int ENOMEM = 12;
    public static final int EFAULT = 14;
    public static final int EBUSY = 16;
    public static final int EINVAL = 22;
    public static final int ENOSPC = 28;
    public static final int ENOSYS = 38;
    public static final int EOPNOTSUPP = 95;
    public static final int EOVERFLOW = 75;
    public static final int ECANCELED = 125;

    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    /** A segment to receive {@code errno} from the calls below, e.g. {@code arena.allocate(errnoLayout())}. */
    public static StructLayout errnoLayout() {
        return CAPTURE_LAYOUT;
    }

    public static MemorySegment allocateErrno(java.lang.foreign.SegmentAllocator allocator) {
        return allocator.allocate(CAPTURE_LAYOUT);
    }

    /** The {@code errno} captured by the last call that received {@code state}. */
    public static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    private static AssertionError unreachable(Throwable t) {
        return new AssertionError("should not reach here", t);
    }

    // ---- int open(const char *pathname, int flags, ... /* mode_t mode */); ----
    private static final class open {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(
                ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT);
        static final MethodHandle HANDLE = LINKER.downcallHandle(LIBC.findOrThrow("open"), DESC,
                Linker.Option.firstVariadicArg(2), Linker.Option.captureCallState("errno"));
    }

    public static int open(MemorySegment errnoState, MemorySegment pathname, int flags, int mode) {
        try {
            return (int) open.HANDLE.invokeExact(errnoState, pathname, flags, mode);
        } catch (Error | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw unreachable(t);
        }
    }

    // ---- int close(int fd); ----
    private static final class close {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT);
        static final MethodHandle HANDLE =
                LINKER.downcallHandle(LIBC.findOrThrow("close"), DESC, Linker.Option.captureCallState("errno"));
    }

    public static int close(MemorySegment errnoState, int fd) {
        try {
            return (int) close.HANDLE.invokeExact(errnoState, fd);
        } catch (Error | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw unreachable(t);
        }
    }

    // ---- int fdatasync(int fd); ----
    private static final class fdatasync {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT);
        static final MethodHandle HANDLE = LINKER.downcallHandle(
                LIBC.findOrThrow("fdatasync"), DESC, Linker.Option.captureCallState("errno"));
    }

    public static int fdatasync(MemorySegment errnoState, int fd) {
        try {
            return (int) fdatasync.HANDLE.invokeExact(errnoState, fd);
        } catch (Error | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw unreachable(t);
        }
    }

    // ---- char *strerror(int errnum); (MT-safe in glibc >= 2.32) ----
    private static final class strerror {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.JAVA_INT);
        static final MethodHandle HANDLE = LINKER.downcallHandle(LIBC.findOrThrow("strerror"), DESC);
    }

    public static MemorySegment strerror(int errnum) {
        try {
            return (MemorySegment) strerror.HANDLE.invokeExact(errnum);
        } catch (Error | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw unreachable(t);
        }
    }

    // ---- int getrlimit(int resource, struct rlimit *rlim); ----
    private static final class getrlimit {
        static final FunctionDescriptor DESC =
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS);
        static final MethodHandle HANDLE = LINKER.downcallHandle(LIBC.findOrThrow("getrlimit"), DESC);
    }

    public static int getrlimit(int resource, MemorySegment rlim) {
        try {
            return (int) getrlimit.HANDLE.invokeExact(resource, rlim);
        } catch (Error | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw unreachable(t);
        }
    }
}
