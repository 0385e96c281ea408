package io.kvoffload.iouring.bindings;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * One io_uring instance: the {@code struct io_uring} that liburing fills (in memory we own), its
 * {@link SubmissionQueue} and {@link CompletionQueue}, and the registration calls. Everything that
 * deals in native addresses for a ring lives here and in those two classes.
 *
 * <p>Not thread-safe: callers serialise all use of one ring (the backend holds a lock per ring).
 * {@link #close()} must run only when nothing is in flight.
 */
public final class IoUringRing implements AutoCloseable {
    private final Arena arena;
    private final MemorySegment ring;
    private final SubmissionQueue sq;
    private final CompletionQueue cq;
    private final RegisteredBuffers buffers;
    private final int setupFlags;
    private final int features;
    private boolean closed;

    private IoUringRing(Arena arena, MemorySegment ring, MemorySegment params, int bufferSlots) {
        this.arena = arena;
        this.ring = ring;
        this.buffers = new RegisteredBuffers(bufferSlots);
        this.sq = new SubmissionQueue(ring, buffers);
        this.cq = new CompletionQueue(ring);
        this.setupFlags = io_uring.flags(ring);
        this.features = io_uring_params.features(params);
    }

    /**
     * io_uring_queue_init_params with {@code entries} SQEs (the kernel sizes the CQ at twice that)
     * and {@code flags}.
     *
     * @param bufferSlots how many fixed-buffer slots {@link #registerBuffersSparse} will create
     *     (0 when fixed buffers are not used)
     * @throws IoUringException with the errno the kernel returned (EPERM under seccomp or
     *     kernel.io_uring_disabled, ENOSYS without io_uring, EINVAL for unknown flags, ENOMEM)
     */
    public static IoUringRing create(int entries, int flags, int bufferSlots) throws IoUringException {
        if (entries < 1 || entries > liburing_h.IORING_MAX_ENTRIES) {
            throw new IllegalArgumentException("entries = " + entries + " is out of range; allowed: 1.."
                    + liburing_h.IORING_MAX_ENTRIES);
        }
        if (bufferSlots < 0 || bufferSlots > liburing_h.IORING_MAX_REG_BUFFERS) {
            throw new IllegalArgumentException("bufferSlots = " + bufferSlots + " is out of range; allowed: 0.."
                    + liburing_h.IORING_MAX_REG_BUFFERS);
        }
        // Shared: the ring is used by whichever thread holds the backend's lock for it.
        Arena arena = Arena.ofShared();
        try {
            MemorySegment ring = io_uring.allocate(arena);
            MemorySegment params = io_uring_params.allocate(arena);
            io_uring_params.flags(params, flags);
            int ret = liburing_h.io_uring_queue_init_params(entries, ring, params);
            if (ret < 0) {
                throw new IoUringException("io_uring_queue_init_params(" + entries + ", flags 0x"
                        + Integer.toHexString(flags) + ")", -ret);
            }
            return new IoUringRing(arena, ring, params, bufferSlots);
        } catch (IoUringException | RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    public SubmissionQueue sq() {
        return sq;
    }

    public CompletionQueue cq() {
        return cq;
    }

    /** The setup flags the ring runs with. */
    public int setupFlags() {
        return setupFlags;
    }

    /** IORING_FEAT_* bits the kernel reported. */
    public int features() {
        return features;
    }

    /** The ring's file descriptor (for diagnostics). */
    public int ringFd() {
        return io_uring.ring_fd(ring);
    }

    /** io_uring_submit: flushes queued SQEs to the kernel; returns how many it took, or {@code -errno}. */
    public int submit() {
        return liburing_h.io_uring_submit(ring);
    }

    /**
     * io_uring_submit_and_wait: flushes queued SQEs and waits until at least {@code waitNr}
     * completions are in the CQ; returns the number submitted or {@code -errno} (EINTR on a signal).
     */
    public int submitAndWait(int waitNr) {
        return liburing_h.io_uring_submit_and_wait(ring, waitNr);
    }

    /** io_uring_register_files with {@code fds} (index i of the table is {@code fds[i]}); 0 or {@code -errno}. */
    public int registerFiles(int[] fds) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment table = a.allocateFrom(ValueLayout.JAVA_INT, fds);
            return liburing_h.io_uring_register_files(ring, table, fds.length);
        }
    }

    /** io_uring_unregister_files; 0 or {@code -errno}. */
    public int unregisterFiles() {
        return liburing_h.io_uring_unregister_files(ring);
    }

    /** io_uring_register_buffers_sparse with the slot count given at creation; 0 or {@code -errno}. */
    public int registerBuffersSparse() {
        return liburing_h.io_uring_register_buffers_sparse(ring, buffers.slots());
    }

    /** Fixed-buffer slots this ring was created for. */
    public int bufferSlots() {
        return buffers.slots();
    }

    /**
     * io_uring_register_buffers_update_tag of slot {@code index} with {@code segment} (which the
     * kernel pins until the slot is cleared or the ring closes). 0 or {@code -errno}.
     */
    public int updateBuffer(int index, MemorySegment segment) {
        checkSlot(index);
        if (segment == null || !segment.isNative() || segment.byteSize() == 0) {
            throw new IllegalArgumentException("segment must be a non-empty native MemorySegment; got " + segment);
        }
        if (segment.byteSize() > liburing_h.IORING_MAX_REG_BUFFER_BYTES) {
            throw new IllegalArgumentException("segment of " + segment.byteSize() + " bytes exceeds the kernel's "
                    + liburing_h.IORING_MAX_REG_BUFFER_BYTES + "-byte limit per registered buffer");
        }
        int ret = update(index, segment.address(), segment.byteSize());
        if (ret >= 0) {
            buffers.set(index, segment.address(), segment.byteSize());
            return 0;
        }
        return ret;
    }

    /** Empties fixed-buffer slot {@code index} (the kernel unpins it); 0 or {@code -errno}. */
    public int clearBuffer(int index) {
        checkSlot(index);
        // Forget it first: from now on nothing may be queued against this slot, even if the
        // kernel call fails.
        buffers.clear(index);
        int ret = update(index, 0L, 0L);
        return ret >= 0 ? 0 : ret;
    }

    /** Whether slot {@code index} holds a registered buffer. */
    public boolean bufferRegistered(int index) {
        checkSlot(index);
        return buffers.isSet(index);
    }

    private int update(int index, long address, long bytes) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment iov = iovec.allocate(a);
            iovec.iov_base(iov, MemorySegment.ofAddress(address));
            iovec.iov_len(iov, bytes);
            return liburing_h.io_uring_register_buffers_update_tag(ring, index, iov, MemorySegment.NULL, 1);
        }
    }

    private void checkSlot(int index) {
        if (index < 0 || index >= buffers.slots()) {
            throw new IllegalArgumentException(
                    "index = " + index + " is out of range; allowed: 0.." + (buffers.slots() - 1));
        }
    }

    /** io_uring_unregister_buffers; 0 or {@code -errno}. */
    public int unregisterBuffers() {
        buffers.clearAll();
        return liburing_h.io_uring_unregister_buffers(ring);
    }

    /** The struct io_uring itself, for tests that call liburing directly. Package-private. */
    MemorySegment struct() {
        return ring;
    }

    /** io_uring_queue_exit, then frees the struct. Nothing may be in flight. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        liburing_h.io_uring_queue_exit(ring);
        arena.close();
    }
}
