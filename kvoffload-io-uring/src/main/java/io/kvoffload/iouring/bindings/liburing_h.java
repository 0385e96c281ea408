package io.kvoffload.iouring.bindings;

import java.lang.foreign.AddressLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Downcall handles and constants for liburing 2.3 ({@code liburing.so.2}), in the shape jextract
 * generates for {@code <liburing.h>} (see {@code kvoffload-io-uring/jextract.sh}): one nested holder
 * class per function, so a handle is linked on first use, plus a static wrapper with the C name.
 *
 * <p>Only the functions that liburing 2.3 exports are here; its {@code static inline} helpers
 * (prep_*, get_sqe, peek_cqe, cqe_seen, cq_advance) have no symbol in {@code liburing.so.2} and are
 * ported to Java in {@link SubmissionQueue} and {@link CompletionQueue}.
 *
 * <p>Mirrors the declarations at
 * <a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing.h#L162-L257">liburing.h
 * lines 162-257</a> and the constants of
 * <a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing/io_uring.h#L110-L229">io_uring.h
 * lines 110-229</a> and
 * <a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing/io_uring.h#L440-L455">lines
 * 440-455</a>.
 *
 * <p>Loading this class loads {@code liburing.so.2}; when the library is missing the class fails to
 * initialise. {@link Liburing#availability()} does that safely.
 */
@SuppressWarnings({"unused", "restricted", "checkstyle:TypeName"})
public final class liburing_h {
    private liburing_h() {}

    /** The shared object name (soname) of liburing 2.x. */
    public static final String LIBRARY = "liburing.so.2";

    static final Arena LIBRARY_ARENA = Arena.global();
    static final SymbolLookup SYMBOL_LOOKUP = SymbolLookup.libraryLookup(LIBRARY, LIBRARY_ARENA);

    public static final ValueLayout.OfBoolean C_BOOL = ValueLayout.JAVA_BOOLEAN;
    public static final ValueLayout.OfByte C_CHAR = ValueLayout.JAVA_BYTE;
    public static final ValueLayout.OfShort C_SHORT = ValueLayout.JAVA_SHORT;
    public static final ValueLayout.OfInt C_INT = ValueLayout.JAVA_INT;
    public static final ValueLayout.OfLong C_LONG_LONG = ValueLayout.JAVA_LONG;
    /** {@code long} and {@code size_t} on LP64 Linux. */
    public static final ValueLayout.OfLong C_LONG = ValueLayout.JAVA_LONG;
    /**
     * A C pointer. Unlike jextract's default, no target layout: a pointer read from a struct is a
     * zero-length segment that the caller must {@code reinterpret} with a size it knows, so a
     * wrong size cannot silently give access to all of memory.
     */
    public static final AddressLayout C_POINTER = ValueLayout.ADDRESS;

    static MemorySegment findOrThrow(String symbol) {
        return SYMBOL_LOOKUP.findOrThrow(symbol);
    }

    private static AssertionError unreachable(Throwable t) {
        return new AssertionError("should not reach here", t);
    }

    // ---- io_uring_setup(2) flags (io_uring.h lines 141-175) ----
    public static final int IORING_SETUP_IOPOLL = 1;
    public static final int IORING_SETUP_SQPOLL = 1 << 1;
    public static final int IORING_SETUP_CQSIZE = 1 << 3;
    public static final int IORING_SETUP_CLAMP = 1 << 4;
    public static final int IORING_SETUP_SUBMIT_ALL = 1 << 7;
    public static final int IORING_SETUP_COOP_TASKRUN = 1 << 8;
    public static final int IORING_SETUP_TASKRUN_FLAG = 1 << 9;
    public static final int IORING_SETUP_SQE128 = 1 << 10;
    public static final int IORING_SETUP_CQE32 = 1 << 11;
    public static final int IORING_SETUP_SINGLE_ISSUER = 1 << 12;
    public static final int IORING_SETUP_DEFER_TASKRUN = 1 << 13;

    // ---- enum io_uring_op (io_uring.h lines 177-230) ----
    public static final int IORING_OP_NOP = 0;
    public static final int IORING_OP_READV = 1;
    public static final int IORING_OP_WRITEV = 2;
    public static final int IORING_OP_FSYNC = 3;
    public static final int IORING_OP_READ_FIXED = 4;
    public static final int IORING_OP_WRITE_FIXED = 5;
    public static final int IORING_OP_READ = 22;
    public static final int IORING_OP_WRITE = 23;

    // ---- sqe->flags (io_uring.h lines 110-136) ----
    public static final int IOSQE_FIXED_FILE = 1;
    public static final int IOSQE_IO_DRAIN = 1 << 1;
    public static final int IOSQE_IO_LINK = 1 << 2;
    public static final int IOSQE_ASYNC = 1 << 4;

    // ---- sq_ring->flags (io_uring.h lines 392-394) ----
    public static final int IORING_SQ_NEED_WAKEUP = 1;
    public static final int IORING_SQ_CQ_OVERFLOW = 1 << 1;
    public static final int IORING_SQ_TASKRUN = 1 << 2;

    // ---- io_uring_params->features (io_uring.h lines 443-455) ----
    public static final int IORING_FEAT_SINGLE_MMAP = 1;
    public static final int IORING_FEAT_NODROP = 1 << 1;
    public static final int IORING_FEAT_SUBMIT_STABLE = 1 << 2;
    public static final int IORING_FEAT_RW_CUR_POS = 1 << 3;
    public static final int IORING_FEAT_EXT_ARG = 1 << 8;
    public static final int IORING_FEAT_NATIVE_WORKERS = 1 << 9;
    public static final int IORING_FEAT_RSRC_TAGS = 1 << 10;

    // ---- liburing.h line 10 / kernel limits used to validate arguments before a call ----
    /** Largest ring the kernel accepts ({@code IORING_MAX_ENTRIES} in io_uring/io_uring.c). */
    public static final int IORING_MAX_ENTRIES = 32768;
    /** Most registered buffers per ring ({@code IORING_MAX_REG_BUFFERS} in io_uring/rsrc.c). */
    public static final int IORING_MAX_REG_BUFFERS = 1 << 14;
    /** Largest single registered buffer ({@code SZ_1G} check in io_buffer_validate, io_uring/rsrc.c). */
    public static final long IORING_MAX_REG_BUFFER_BYTES = 1L << 30;

    // ---- int io_uring_queue_init_params(unsigned entries, struct io_uring *ring, struct io_uring_params *p); (line 162) ----
    private static final class io_uring_queue_init_params {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(C_INT, C_INT, C_POINTER, C_POINTER);
        static final MemorySegment ADDR = findOrThrow("io_uring_queue_init_params");
        static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    public static FunctionDescriptor io_uring_queue_init_params$descriptor() {
        return io_uring_queue_init_params.DESC;
    }

    public static MethodHandle io_uring_queue_init_params$handle() {
        return io_uring_queue_init_params.HANDLE;
    }

    public static int io_uring_queue_init_params(int entries, MemorySegment ring, MemorySegment p) {
        try {
            return (int) io_uring_queue_init_params.HANDLE.invokeExact(entries, ring, p);
        } catch (Error | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw unreachable(t);
        }
    }

    // ---- int io_uring_queue_init(unsigned entries, struct io_uring *ring, unsigned flags); (line 164) ----
    private static final class io_uring_queue_init {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(C_INT, C_INT, C_POINTER, C_INT);
        static final MemorySegment ADDR = findOrThrow("io_uring_queue_init");
        static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    public static MethodHandle io_uring_queue_init$handle() {
        return io_uring_queue_init.HANDLE;
    }

    public static int io_uring_queue_init(int entries, MemorySegment ring, int flags) {
        try {
            return (int) io_uring_queue_init.HANDLE.invokeExact(entries, ring, flags);
        } catch (Error | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw unreachable(t);
        }
    }

    // ---- void io_uring_queue_exit(struct io_uring *ring); (line 169) ----
    private static final class io_uring_queue_exit {
        static final FunctionDescriptor DESC = FunctionDescriptor.ofVoid(C_POINTER);
        static final MemorySegment ADDR = findOrThrow("io_uring_queue_exit");
        static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    public static MethodHandle io_uring_queue_exit$handle() {
        return io_uring_queue_exit.HANDLE;
    }

    public static void io_uring_queue_exit(MemorySegment ring) {
        try {
            io_uring_queue_exit.HANDLE.invokeExact(ring);
        } catch (Error | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw unreachable(t);
        }
    }

    // ---- unsigned io_uring_peek_batch_cqe(struct io_uring *ring, struct io_uring_cqe **cqes, unsigned count); (line 170) ----
    private static final class io_uring_peek_batch_cqe {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(C_INT, C_POINTER, C_POINTER, C_INT);
        static final MemorySegment ADDR = findOrThrow("io_uring_peek_batch_cqe");
        static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    public static MethodHandle io_uring_peek_batch_cqe$handle() {
        return io_uring_peek_batch_cqe.HANDLE;
    }

    public static int io_uring_peek_batch_cqe(MemorySegment ring, MemorySegment cqes, int count) {
        try {
            return (int) io_uring_peek_batch_cqe.HANDLE.invokeExact(ring, cqes, count);
        } catch (Error | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw unreachable(t);
        }
    }

    // ---- int io_uring_wait_cqes(struct io_uring *ring, struct io_uring_cqe **cqe_ptr, unsigned wait_nr,
    //      struct __kernel_timespec *ts, sigset_t *sigmask); (line 172) ----
    private static final class io_uring_wait_cqes {
        static final FunctionDescriptor DESC =
                FunctionDescriptor.of(C_INT, C_POINTER, C_POINTER, C_INT, C_POINTER, C_POINTER);
        static final MemorySegment ADDR = findOrThrow("io_uring_wait_cqes");
        static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    public static MethodHandle io_uring_wait_cqes$handle() {
        return io_uring_wait_cqes.HANDLE;
    }

    public static int io_uring_wait_cqes(
            MemorySegment ring, MemorySegment cqePtr, int waitNr, MemorySegment ts, MemorySegment sigmask) {
        try {
            return (int) io_uring_wait_cqes.HANDLE.invokeExact(ring, cqePtr, waitNr, ts, sigmask);
        } catch (Error | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw unreachable(t);
        }
    }

    // ---- int io_uring_submit(struct io_uring *ring); (line 178) ----
    private static final class io_uring_submit {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(C_INT, C_POINTER);
        static final MemorySegment ADDR = findOrThrow("io_uring_submit");
        static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    public static MethodHandle io_uring_submit$handle() {
        return io_uring_submit.HANDLE;
    }

    public static int io_uring_submit(MemorySegment ring) {
        try {
            return (int) io_uring_submit.HANDLE.invokeExact(ring);
        } catch (Error | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw unreachable(t);
        }
    }

    // ---- int io_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr); (line 179) ----
    private static final class io_uring_submit_and_wait {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(C_INT, C_POINTER, C_INT);
        static final MemorySegment ADDR = findOrThrow("io_uring_submit_and_wait");
        static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    public static MethodHandle io_uring_submit_and_wait$handle() {
        return io_uring_submit_and_wait.HANDLE;
    }

    public static int io_uring_submit_and_wait(MemorySegment ring, int waitNr) {
        try {
            return (int) io_uring_submit_and_wait.HANDLE.invokeExact(ring, waitNr);
        } catch (Error | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw unreachable(t);
        }
    }

    // ---- int io_uring_register_buffers(struct io_uring *ring, const struct iovec *iovecs, unsigned nr_iovecs); (line 186) ----
    private static final class io_uring_register_buffers {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(C_INT, C_POINTER, C_POINTER, C_INT);
        static final MemorySegment ADDR = findOrThrow("io_uring_register_buffers");
        static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    public static MethodHandle io_uring_register_buffers$handle() {
        return io_uring_register_buffers.HANDLE;
    }

    public static int io_uring_register_buffers(MemorySegment ring, MemorySegment iovecs, int nrIovecs) {
        try {
            return (int) io_uring_register_buffers.HANDLE.invokeExact(ring, iovecs, nrIovecs);
        } catch (Error | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw unreachable(t);
        }
    }

    // ---- int io_uring_register_buffers_sparse(struct io_uring *ring, unsigned nr); (line 191) ----
    private static final class io_uring_register_buffers_sparse {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(C_INT, C_POINTER, C_INT);
        static final MemorySegment ADDR = findOrThrow("io_uring_register_buffers_sparse");
        static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    public static MethodHandle io_uring_register_buffers_sparse$handle() {
        return io_uring_register_buffers_sparse.HANDLE;
    }

    public static int io_uring_register_buffers_sparse(MemorySegment ring, int nr) {
        try {
            return (int) io_uring_register_buffers_sparse.HANDLE.invokeExact(ring, nr);
        } catch (Error | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw unreachable(t);
        }
    }

    // ---- int io_uring_register_buffers_update_tag(struct io_uring *ring, unsigned off,
    //      const struct iovec *iovecs, const __u64 *tags, unsigned nr); (line 192) ----
    private static final class io_uring_register_buffers_update_tag {
        static final FunctionDescriptor DESC =
                FunctionDescriptor.of(C_INT, C_POINTER, C_INT, C_POINTER, C_POINTER, C_INT);
        static final MemorySegment ADDR = findOrThrow("io_uring_register_buffers_update_tag");
        static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    public static MethodHandle io_uring_register_buffers_update_tag$handle() {
        return io_uring_register_buffers_update_tag.HANDLE;
    }

    public static int io_uring_register_buffers_update_tag(
            MemorySegment ring, int off, MemorySegment iovecs, MemorySegment tags, int nr) {
        try {
            return (int) io_uring_register_buffers_update_tag.HANDLE.invokeExact(ring, off, iovecs, tags, nr);
        } catch (Error | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw unreachable(t);
        }
    }

    // ---- int io_uring_unregister_buffers(struct io_uring *ring); (line 196) ----
    private static final class io_uring_unregister_buffers {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(C_INT, C_POINTER);
        static final MemorySegment ADDR = findOrThrow("io_uring_unregister_buffers");
        static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    public static MethodHandle io_uring_unregister_buffers$handle() {
        return io_uring_unregister_buffers.HANDLE;
    }

    public static int io_uring_unregister_buffers(MemorySegment ring) {
        try {
            return (int) io_uring_unregister_buffers.HANDLE.invokeExact(ring);
        } catch (Error | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw unreachable(t);
        }
    }

    // ---- int io_uring_register_files(struct io_uring *ring, const int *files, unsigned nr_files); (line 198) ----
    private static final class io_uring_register_files {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(C_INT, C_POINTER, C_POINTER, C_INT);
        static final MemorySegment ADDR = findOrThrow("io_uring_register_files");
        static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    public static MethodHandle io_uring_register_files$handle() {
        return io_uring_register_files.HANDLE;
    }

    public static int io_uring_register_files(MemorySegment ring, MemorySegment files, int nrFiles) {
        try {
            return (int) io_uring_register_files.HANDLE.invokeExact(ring, files, nrFiles);
        } catch (Error | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw unreachable(t);
        }
    }

    // ---- int io_uring_unregister_files(struct io_uring *ring); (line 207) ----
    private static final class io_uring_unregister_files {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(C_INT, C_POINTER);
        static final MemorySegment ADDR = findOrThrow("io_uring_unregister_files");
        static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    public static MethodHandle io_uring_unregister_files$handle() {
        return io_uring_unregister_files.HANDLE;
    }

    public static int io_uring_unregister_files(MemorySegment ring) {
        try {
            return (int) io_uring_unregister_files.HANDLE.invokeExact(ring);
        } catch (Error | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw unreachable(t);
        }
    }

    // ---- int __io_uring_get_cqe(struct io_uring *ring, struct io_uring_cqe **cqe_ptr, unsigned submit,
    //      unsigned wait_nr, sigset_t *sigmask); (line 257) ----
    private static final class __io_uring_get_cqe {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(C_INT, C_POINTER, C_POINTER, C_INT, C_INT, C_POINTER);
        static final MemorySegment ADDR = findOrThrow("__io_uring_get_cqe");
        static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    public static MethodHandle __io_uring_get_cqe$handle() {
        return __io_uring_get_cqe.HANDLE;
    }

    public static int __io_uring_get_cqe(
            MemorySegment ring, MemorySegment cqePtr, int submit, int waitNr, MemorySegment sigmask) {
        try {
            return (int) __io_uring_get_cqe.HANDLE.invokeExact(ring, cqePtr, submit, waitNr, sigmask);
        } catch (Error | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw unreachable(t);
        }
    }

    // ---- struct io_uring_sqe *io_uring_get_sqe(struct io_uring *ring); ----
    // liburing.h declares it static inline (line 1339) for applications, but liburing.so.2 also
    // exports an out-of-line copy (built with LIBURING_INTERNAL, line 1344); tests use it to check the
    // Java port in SubmissionQueue#getSqe against the library.
    private static final class io_uring_get_sqe {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(C_POINTER, C_POINTER);
        static final MemorySegment ADDR = findOrThrow("io_uring_get_sqe");
        static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    public static MethodHandle io_uring_get_sqe$handle() {
        return io_uring_get_sqe.HANDLE;
    }

    public static MemorySegment io_uring_get_sqe(MemorySegment ring) {
        try {
            return (MemorySegment) io_uring_get_sqe.HANDLE.invokeExact(ring);
        } catch (Error | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw unreachable(t);
        }
    }
}
