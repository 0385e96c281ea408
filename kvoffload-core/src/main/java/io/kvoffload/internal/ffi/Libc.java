package io.kvoffload.internal.ffi;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;

/**
 * The few libc calls core needs, bound through FFM. This package is the only one in core that
 * touches native addresses; the public methods take Java values or paths, and the mapping calls are
 * package-private, for {@link AnonymousMemory} to wrap in bounded segments.
 */
public final class Libc {
    private static final int O_RDWR = 02;
    private static final int O_CREAT = 0100;
    private static final int O_CLOEXEC = 02000000;

    private static final MethodHandle OPEN;
    private static final MethodHandle CLOSE;
    private static final MethodHandle POSIX_FALLOCATE;
    /** glibc's malloc_trim, or null (another libc). */
    private static final MethodHandle MALLOC_TRIM;
    private static final MethodHandle MMAP;
    private static final MethodHandle MUNMAP;
    private static final MethodHandle MADVISE;
    private static final Throwable UNAVAILABLE;

    static {
        MethodHandle open = null;
        MethodHandle close = null;
        MethodHandle fallocate = null;
        MethodHandle trim = null;
        MethodHandle mmap = null;
        MethodHandle munmap = null;
        MethodHandle madvise = null;
        Throwable failure = null;
        try {
            Linker linker = Linker.nativeLinker();
            SymbolLookup libc = linker.defaultLookup();
            open = linker.downcallHandle(libc.findOrThrow("open"),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT,
                            ValueLayout.JAVA_INT),
                    Linker.Option.firstVariadicArg(2), Linker.Option.captureCallState("errno"));
            close = linker.downcallHandle(libc.findOrThrow("close"),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
            fallocate = linker.downcallHandle(libc.findOrThrow("posix_fallocate"),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG,
                            ValueLayout.JAVA_LONG));
            trim = libc.find("malloc_trim").map(a -> linker.downcallHandle(a,
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG))).orElse(null);
            // Addresses as JAVA_LONG: AnonymousMemory turns a mapping into a bounded segment itself.
            mmap = linker.downcallHandle(libc.findOrThrow("mmap"),
                    FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                            ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
            munmap = linker.downcallHandle(libc.findOrThrow("munmap"),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));
            madvise = linker.downcallHandle(libc.findOrThrow("madvise"),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                            ValueLayout.JAVA_INT));
        } catch (Throwable t) {
            failure = t;
        }
        OPEN = open;
        CLOSE = close;
        POSIX_FALLOCATE = fallocate;
        MALLOC_TRIM = trim;
        MMAP = mmap;
        MUNMAP = munmap;
        MADVISE = madvise;
        UNAVAILABLE = failure;
    }

    private Libc() {}

    /** Why native calls are unavailable (no native access granted, not Linux), or null. */
    public static Throwable unavailableReason() {
        return UNAVAILABLE;
    }

    /** {@code mmap(0, length, prot, flags, -1, 0)}: the address, or -1 (MAP_FAILED). Callers check availability. */
    static long mmapAnonymous(long length, int prot, int flags) throws Throwable {
        return (long) MMAP.invokeExact(0L, length, prot, flags, -1, 0L);
    }

    /** {@code munmap(address, length)}: 0 or -1. */
    static int munmap(long address, long length) throws Throwable {
        return (int) MUNMAP.invokeExact(address, length);
    }

    /** {@code madvise(address, length, advice)}: 0 or -1. */
    static int madvise(long address, long length, int advice) throws Throwable {
        return (int) MADVISE.invokeExact(address, length, advice);
    }

    /**
     * Asks glibc to hand free heap pages back to the OS ({@code malloc_trim(0)}): freed off-heap
     * memory of a size glibc keeps in its heaps (once a freed block has raised its mmap threshold)
     * otherwise stays resident. Returns whether memory was released; false where the call is
     * unavailable (no native access, another libc).
     */
    public static boolean mallocTrim() {
        if (MALLOC_TRIM == null) {
            return false;
        }
        try {
            return (int) MALLOC_TRIM.invokeExact(0L) == 1;
        } catch (Throwable t) {
            return false;
        }
    }

    /**
     * Reserves {@code length} bytes of disk for {@code file} (creating it), so later writes cannot
     * fail for lack of space. Returns 0 or the errno; throws if native access is unavailable.
     */
    public static int posixFallocate(Path file, long length) {
        if (UNAVAILABLE != null) {
            throw new UnsupportedOperationException("native access unavailable: " + UNAVAILABLE, UNAVAILABLE);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment path = arena.allocateFrom(file.toString());
            MemorySegment state = arena.allocate(Linker.Option.captureStateLayout());
            int fd = (int) OPEN.invokeExact(state, path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
            if (fd < 0) {
                return state.get(ValueLayout.JAVA_INT,
                        Linker.Option.captureStateLayout().byteOffset(
                                java.lang.foreign.MemoryLayout.PathElement.groupElement("errno")));
            }
            try {
                return (int) POSIX_FALLOCATE.invokeExact(fd, 0L, length);
            } finally {
                int ignored = (int) CLOSE.invokeExact(fd);
            }
        } catch (Throwable t) {
            throw new IllegalStateException("posix_fallocate(" + file + ", " + length + ") failed", t);
        }
    }
}
