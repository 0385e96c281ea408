package io.kvoffload.iouring.bindings;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The submission side of one ring: Java ports of liburing 2.3's {@code static inline} SQ helpers,
 * which have no symbol in {@code liburing.so.2}. Structured like Netty's io_uring
 * {@code SubmissionQueue}: SQEs are addressed by ring index and written in place in the mapped SQE
 * array, so filling one allocates nothing.
 *
 * <p>The SQ tail that the kernel reads is published by liburing's {@code io_uring_submit}
 * ({@code __io_uring_flush_sq} stores {@code *ktail} with release semantics); this class only
 * advances liburing's private {@code sqe_tail}, exactly as {@code _io_uring_get_sqe} does.
 *
 * <p>Every public method that hands memory to the kernel takes a {@link MemorySegment} and checks
 * that the transfer lies inside it (and, for fixed buffers, inside the registered buffer) before
 * an SQE is claimed: a second fence behind the checks of {@code IoBatch}. Not thread-safe: the
 * owner of the ring serialises access.
 */
@SuppressWarnings("restricted") // the bindings package is where native access is allowed
public final class SubmissionQueue {
    private static final VarHandle U32 = ValueLayout.JAVA_INT.varHandle().withInvokeExactBehavior();
    private static final long SQE_SIZE = 64;
    private static final long SQE_TAIL = io_uring.sq$offset() + io_uring_sq.sqe_tail$offset();

    private final MemorySegment ring;
    private final MemorySegment khead;
    private final MemorySegment sqes;
    private final int ringMask;
    private final int ringEntries;
    private final boolean sqpoll;
    private final RegisteredBuffers buffers;

    SubmissionQueue(MemorySegment ring, RegisteredBuffers buffers) {
        this.ring = ring;
        MemorySegment sq = io_uring.sq(ring);
        this.ringMask = io_uring_sq.ring_mask(sq);
        this.ringEntries = io_uring_sq.ring_entries(sq);
        this.khead = io_uring_sq.khead(sq).reinterpret(Integer.BYTES);
        this.sqes = io_uring_sq.sqes(sq).reinterpret(ringEntries * SQE_SIZE);
        this.sqpoll = (io_uring.flags(ring) & liburing_h.IORING_SETUP_SQPOLL) != 0;
        this.buffers = buffers;
    }

    /** Number of SQEs the ring holds. */
    public int entries() {
        return ringEntries;
    }

    /**
     * Port of {@code _io_uring_get_sqe}
     * (<a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing.h#L1258-L1280">liburing.h
     * lines 1258-1280</a>): claims the next free SQE.
     *
     * @return the SQE's index in the SQE array, or -1 when the SQ is full (submit first)
     */
    int getSqe() {
        int tail = ring.get(ValueLayout.JAVA_INT, SQE_TAIL);
        int next = tail + 1;
        // IO_URING_READ_ONCE for the non-SQPOLL case: we are the only one moving the head forward
        // (through io_uring_enter), a relaxed load suffices; SQPOLL needs acquire.
        int head = sqpoll ? (int) U32.getAcquire(khead, 0L) : (int) U32.getOpaque(khead, 0L);
        if (Integer.compareUnsigned(next - head, ringEntries) <= 0) {
            ring.set(ValueLayout.JAVA_INT, SQE_TAIL, next);
            return tail & ringMask;
        }
        return -1;
    }

    /** SQE {@code index} of the mapped array, as a slice (tests compare it with liburing's get_sqe). */
    MemorySegment sqe(int index) {
        return io_uring_sqe.asSlice(sqes, index);
    }

    /**
     * Port of {@code io_uring_sq_ready}
     * (<a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing.h#L1070-L1083">liburing.h
     * lines 1070-1083</a>): SQEs claimed but not yet consumed by the kernel.
     */
    public int ready() {
        int head = sqpoll ? (int) U32.getAcquire(khead, 0L) : khead.get(ValueLayout.JAVA_INT, 0L);
        return ring.get(ValueLayout.JAVA_INT, SQE_TAIL) - head;
    }

    /**
     * Port of {@code io_uring_sq_space_left}
     * (<a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing.h#L1089-L1092">liburing.h
     * lines 1089-1092</a>).
     */
    public int spaceLeft() {
        return ringEntries - ready();
    }

    /**
     * Port of {@code io_uring_prep_rw}
     * (<a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing.h#L363-L380">liburing.h
     * lines 363-380</a>). Raw address: package-private, reached only through the checked methods.
     */
    void prepRw(int op, int sqe, int fd, long addr, int len, long offset) {
        long base = sqe * SQE_SIZE;
        sqes.set(ValueLayout.JAVA_BYTE, base + io_uring_sqe.opcode$offset(), (byte) op);
        sqes.set(ValueLayout.JAVA_BYTE, base + io_uring_sqe.flags$offset(), (byte) 0);
        sqes.set(ValueLayout.JAVA_SHORT, base + io_uring_sqe.ioprio$offset(), (short) 0);
        sqes.set(ValueLayout.JAVA_INT, base + io_uring_sqe.fd$offset(), fd);
        sqes.set(ValueLayout.JAVA_LONG, base + io_uring_sqe.off$offset(), offset);
        sqes.set(ValueLayout.JAVA_LONG, base + io_uring_sqe.addr$offset(), addr);
        sqes.set(ValueLayout.JAVA_INT, base + io_uring_sqe.len$offset(), len);
        sqes.set(ValueLayout.JAVA_INT, base + io_uring_sqe.rw_flags$offset(), 0);
        sqes.set(ValueLayout.JAVA_SHORT, base + io_uring_sqe.buf_index$offset(), (short) 0);
        sqes.set(ValueLayout.JAVA_SHORT, base + io_uring_sqe.personality$offset(), (short) 0);
        sqes.set(ValueLayout.JAVA_INT, base + io_uring_sqe.file_index$offset(), 0);
        sqes.set(ValueLayout.JAVA_LONG, base + io_uring_sqe.addr3$offset(), 0L);
        sqes.set(ValueLayout.JAVA_LONG, base + io_uring_sqe.__pad2$offset(), 0L);
    }

    /**
     * Port of {@code io_uring_prep_read}
     * (<a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing.h#L696-L700">liburing.h
     * lines 696-700</a>).
     */
    void prepRead(int sqe, int fd, long buf, int nbytes, long offset) {
        prepRw(liburing_h.IORING_OP_READ, sqe, fd, buf, nbytes, offset);
    }

    /**
     * Port of {@code io_uring_prep_write}
     * (<a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing.h#L702-L707">liburing.h
     * lines 702-707</a>).
     */
    void prepWrite(int sqe, int fd, long buf, int nbytes, long offset) {
        prepRw(liburing_h.IORING_OP_WRITE, sqe, fd, buf, nbytes, offset);
    }

    /**
     * Port of {@code io_uring_prep_read_fixed}
     * (<a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing.h#L444-L450">liburing.h
     * lines 444-450</a>).
     */
    void prepReadFixed(int sqe, int fd, long buf, int nbytes, long offset, int bufIndex) {
        prepRw(liburing_h.IORING_OP_READ_FIXED, sqe, fd, buf, nbytes, offset);
        sqes.set(ValueLayout.JAVA_SHORT, sqe * SQE_SIZE + io_uring_sqe.buf_index$offset(), (short) bufIndex);
    }

    /**
     * Port of {@code io_uring_prep_write_fixed}
     * (<a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing.h#L468-L474">liburing.h
     * lines 468-474</a>).
     */
    void prepWriteFixed(int sqe, int fd, long buf, int nbytes, long offset, int bufIndex) {
        prepRw(liburing_h.IORING_OP_WRITE_FIXED, sqe, fd, buf, nbytes, offset);
        sqes.set(ValueLayout.JAVA_SHORT, sqe * SQE_SIZE + io_uring_sqe.buf_index$offset(), (short) bufIndex);
    }

    /**
     * Port of {@code io_uring_sqe_set_data64}
     * (<a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing.h#L334-L338">liburing.h
     * lines 334-338</a>).
     */
    void setData64(int sqe, long data) {
        sqes.set(ValueLayout.JAVA_LONG, sqe * SQE_SIZE + io_uring_sqe.user_data$offset(), data);
    }

    /**
     * Port of {@code io_uring_sqe_set_flags}
     * (<a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing.h#L350-L354">liburing.h
     * lines 350-354</a>).
     */
    void setFlags(int sqe, int flags) {
        sqes.set(ValueLayout.JAVA_BYTE, sqe * SQE_SIZE + io_uring_sqe.flags$offset(), (byte) flags);
    }

    /**
     * Queues a read or write of {@code length} bytes between {@code buffer[bufferOffset..]} and the
     * file at {@code fileOffset}: get_sqe, then prep_read/prep_write (or the _fixed variants when
     * {@code bufIndex >= 0}), set_flags, set_data64.
     *
     * @param write true for a write (the kernel reads the buffer), false for a read (it writes it)
     * @param fd a file descriptor, or an index into the registered files when {@code sqeFlags}
     *     holds {@link liburing_h#IOSQE_FIXED_FILE}
     * @param bufIndex index of the registered buffer that contains the range, or -1 for none
     * @return false, with nothing claimed, when the SQ is full
     * @throws IllegalArgumentException if the range is not inside {@code buffer}, {@code buffer} is
     *     not native (or read-only for a read), or not inside registered buffer {@code bufIndex}
     */
    public boolean enqueueRw(boolean write, int fd, int sqeFlags, MemorySegment buffer, long bufferOffset,
            int length, long fileOffset, int bufIndex, long userData) {
        checkTransfer(write, buffer, bufferOffset, length, fileOffset);
        long addr = buffer.address() + bufferOffset;
        if (bufIndex >= 0) {
            buffers.checkInside(bufIndex, addr, length);
        }
        int sqe = getSqe();
        if (sqe < 0) {
            return false;
        }
        if (bufIndex >= 0) {
            if (write) {
                prepWriteFixed(sqe, fd, addr, length, fileOffset, bufIndex);
            } else {
                prepReadFixed(sqe, fd, addr, length, fileOffset, bufIndex);
            }
        } else if (write) {
            prepWrite(sqe, fd, addr, length, fileOffset);
        } else {
            prepRead(sqe, fd, addr, length, fileOffset);
        }
        setFlags(sqe, sqeFlags);
        setData64(sqe, userData);
        return true;
    }

    /** Queues a no-op whose completion carries {@code userData} (used to test the rings). */
    public boolean enqueueNop(long userData) {
        int sqe = getSqe();
        if (sqe < 0) {
            return false;
        }
        prepRw(liburing_h.IORING_OP_NOP, sqe, -1, 0L, 0, 0L);
        setData64(sqe, userData);
        return true;
    }

    private static void checkTransfer(boolean write, MemorySegment buffer, long bufferOffset, int length,
            long fileOffset) {
        if (buffer == null || !buffer.isNative()) {
            throw new IllegalArgumentException("buffer must be a native MemorySegment; got " + buffer);
        }
        if (!write && buffer.isReadOnly()) {
            throw new IllegalArgumentException("buffer is read-only but a read would write into it: " + buffer);
        }
        if (length <= 0) {
            throw new IllegalArgumentException("length = " + length + " must be positive");
        }
        if (bufferOffset < 0 || bufferOffset > buffer.byteSize() - length) {
            throw new IllegalArgumentException("bufferOffset = " + bufferOffset + " with length " + length
                    + " is outside the buffer of " + buffer.byteSize() + " bytes; allowed: 0.."
                    + (buffer.byteSize() - length));
        }
        if (fileOffset < 0) {
            throw new IllegalArgumentException("fileOffset = " + fileOffset + " must be >= 0");
        }
    }
}
