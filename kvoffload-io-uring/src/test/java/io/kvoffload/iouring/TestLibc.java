package io.kvoffload.iouring;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * libc calls that only tests need, to set up conditions behind the backend's back: swap a file
 * descriptor, map address space without touching it, drop a capability, lower a resource limit.
 */
@SuppressWarnings("restricted")
final class TestLibc {
    private TestLibc() {}

    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();

    private static MethodHandle handle(String name, FunctionDescriptor desc) {
        return LINKER.downcallHandle(LIBC.findOrThrow(name), desc);
    }

    private static final MethodHandle OPEN = LINKER.downcallHandle(LIBC.findOrThrow("open"),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT),
            Linker.Option.firstVariadicArg(2));
    private static final MethodHandle DUP2 =
            handle("dup2", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    private static final MethodHandle CLOSE =
            handle("close", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    private static final MethodHandle MMAP = handle("mmap", FunctionDescriptor.of(ValueLayout.ADDRESS,
            ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
            ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
    private static final MethodHandle MUNMAP =
            handle("munmap", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    private static final MethodHandle CAPGET =
            handle("capget", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    private static final MethodHandle CAPSET =
            handle("capset", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    private static final MethodHandle GETRLIMIT =
            handle("getrlimit", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
    private static final MethodHandle SETRLIMIT =
            handle("setrlimit", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS));

    static final int RLIMIT_MEMLOCK = 8;
    private static final int CAP_IPC_LOCK = 14;
    private static final int LINUX_CAPABILITY_VERSION_3 = 0x20080522;

    /** Makes {@code fd} refer to /dev/null opened write-only (dup2 is atomic: no window for reuse). */
    static void replaceWithWriteOnlyDevNull(int fd) throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            int devNull = (int) OPEN.invokeExact(a.allocateFrom("/dev/null"), 01 /* O_WRONLY */);
            if (devNull < 0) {
                throw new IllegalStateException("open(/dev/null) failed");
            }
            if ((int) DUP2.invokeExact(devNull, fd) != fd) {
                throw new IllegalStateException("dup2 failed");
            }
            int ignored = (int) CLOSE.invokeExact(devNull);
        }
    }

    /** Reserves {@code bytes} of anonymous address space without committing memory (MAP_NORESERVE). */
    static MemorySegment mapUntouched(long bytes) throws Throwable {
        MemorySegment p = (MemorySegment) MMAP.invokeExact(MemorySegment.NULL, bytes, 0x1 | 0x2 /* READ|WRITE */,
                0x02 | 0x20 | 0x4000 /* PRIVATE|ANONYMOUS|NORESERVE */, -1, 0L);
        if (p.address() == -1L) {
            throw new IllegalStateException("mmap of " + bytes + " bytes failed");
        }
        return p.reinterpret(bytes);
    }

    static void unmap(MemorySegment seg) throws Throwable {
        int ignored = (int) MUNMAP.invokeExact(seg, seg.byteSize());
    }

    /**
     * Drops CAP_IPC_LOCK from the calling thread's effective set (capabilities are per thread on
     * Linux), so rings this thread creates count registered buffers against RLIMIT_MEMLOCK.
     */
    static void dropIpcLockForThisThread() throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment header = a.allocate(8);
            header.set(ValueLayout.JAVA_INT, 0, LINUX_CAPABILITY_VERSION_3);
            header.set(ValueLayout.JAVA_INT, 4, 0);
            MemorySegment data = a.allocate(24); // two { effective, permitted, inheritable }
            if ((int) CAPGET.invokeExact(header, data) != 0) {
                throw new IllegalStateException("capget failed");
            }
            data.set(ValueLayout.JAVA_INT, 0, data.get(ValueLayout.JAVA_INT, 0) & ~(1 << CAP_IPC_LOCK));
            if ((int) CAPSET.invokeExact(header, data) != 0) {
                throw new IllegalStateException("capset failed");
            }
        }
    }

    /** {rlim_cur, rlim_max} of {@code resource}. */
    static long[] getrlimit(int resource) throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment rl = a.allocate(16);
            if ((int) GETRLIMIT.invokeExact(resource, rl) != 0) {
                throw new IllegalStateException("getrlimit failed");
            }
            return new long[] {rl.get(ValueLayout.JAVA_LONG, 0), rl.get(ValueLayout.JAVA_LONG, 8)};
        }
    }

    static void setrlimit(int resource, long cur, long max) throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment rl = a.allocate(16);
            rl.set(ValueLayout.JAVA_LONG, 0, cur);
            rl.set(ValueLayout.JAVA_LONG, 8, max);
            if ((int) SETRLIMIT.invokeExact(resource, rl) != 0) {
                throw new IllegalStateException("setrlimit failed");
            }
        }
    }
}
