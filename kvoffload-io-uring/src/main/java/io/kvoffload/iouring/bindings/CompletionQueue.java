package io.kvoffload.iouring.bindings;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The completion side of one ring: Java ports of liburing 2.3's {@code static inline} CQ helpers
 * (peek, cq_ready, cqe_seen, cq_advance), shaped like Netty's io_uring {@code CompletionQueue}.
 * CQEs are addressed by their head position ({@code head + k}) and read in place, so reaping
 * allocates nothing.
 *
 * <p>Ordering follows liburing's barriers: the kernel's tail is loaded with acquire semantics before
 * the CQEs it covers are read, and the head is stored with release semantics after they were read,
 * so the kernel never overwrites an entry still being read. Not thread-safe: the owner of the ring
 * serialises access.
 */
@SuppressWarnings("restricted") // the bindings package is where native access is allowed
public final class CompletionQueue {
    private static final VarHandle U32 = ValueLayout.JAVA_INT.varHandle().withInvokeExactBehavior();
    private static final long CQE_SIZE = 16;

    private final MemorySegment khead;
    private final MemorySegment ktail;
    private final MemorySegment sqFlags;
    private final MemorySegment cqes;
    private final int ringMask;
    private final int ringEntries;

    CompletionQueue(MemorySegment ring) {
        MemorySegment cq = io_uring.cq(ring);
        if ((io_uring.flags(ring) & liburing_h.IORING_SETUP_CQE32) != 0) {
            throw new IllegalStateException("rings set up with IORING_SETUP_CQE32 are not supported");
        }
        this.ringMask = io_uring_cq.ring_mask(cq);
        this.ringEntries = io_uring_cq.ring_entries(cq);
        this.khead = io_uring_cq.khead(cq).reinterpret(Integer.BYTES);
        this.ktail = io_uring_cq.ktail(cq).reinterpret(Integer.BYTES);
        this.cqes = io_uring_cq.cqes(cq).reinterpret(ringEntries * CQE_SIZE);
        this.sqFlags = io_uring_sq.kflags(io_uring.sq(ring)).reinterpret(Integer.BYTES);
    }

    /** Number of CQEs the ring holds. */
    public int entries() {
        return ringEntries;
    }

    /**
     * Port of {@code io_uring_cq_ready}
     * (<a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing.h#L1114-L1117">liburing.h
     * lines 1114-1117</a>): completions available to read.
     */
    public int ready() {
        return (int) U32.getAcquire(ktail, 0L) - head();
    }

    /** The current head position (only we move it, so a plain load is enough). */
    public int head() {
        return khead.get(ValueLayout.JAVA_INT, 0L);
    }

    /**
     * Port of the loop body of {@code __io_uring_peek_cqe}
     * (<a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing.h#L1183-L1220">liburing.h
     * lines 1183-1220</a>): the head position of the next CQE, or -1 when none is ready. (The
     * LIBURING_UDATA_TIMEOUT branch there only concerns liburing's internal timeouts on kernels
     * without IORING_FEAT_EXT_ARG, which we never queue.)
     */
    public long peek() {
        int tail = (int) U32.getAcquire(ktail, 0L);
        int head = head();
        return tail - head == 0 ? -1 : head & 0xFFFF_FFFFL;
    }

    /** Address of the CQE at head position {@code position} (tests compare it with liburing's peek). */
    long cqeAddress(int position) {
        return cqes.address() + (position & ringMask) * CQE_SIZE;
    }

    /** {@code user_data} of the CQE at head position {@code position}. */
    public long userData(int position) {
        return cqes.get(ValueLayout.JAVA_LONG, (position & ringMask) * CQE_SIZE + io_uring_cqe.user_data$offset());
    }

    /** {@code res} of the CQE at head position {@code position}: bytes transferred or {@code -errno}. */
    public int res(int position) {
        return cqes.get(ValueLayout.JAVA_INT, (position & ringMask) * CQE_SIZE + io_uring_cqe.res$offset());
    }

    /** {@code flags} of the CQE at head position {@code position}. */
    public int flags(int position) {
        return cqes.get(ValueLayout.JAVA_INT, (position & ringMask) * CQE_SIZE + io_uring_cqe.flags$offset());
    }

    /**
     * Port of {@code io_uring_cq_advance}
     * (<a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing.h#L286-L298">liburing.h
     * lines 286-298</a>): marks {@code nr} CQEs consumed with a release store of the head.
     */
    public void advance(int nr) {
        if (nr != 0) {
            U32.setRelease(khead, 0L, head() + nr);
        }
    }

    /**
     * Port of {@code io_uring_cqe_seen}
     * (<a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing.h#L304-L309">liburing.h
     * lines 304-309</a>).
     */
    public void seen() {
        advance(1);
    }

    /**
     * Port of {@code io_uring_cq_has_overflow}
     * (<a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing.h#L1123-L1126">liburing.h
     * lines 1123-1126</a>): completions the kernel could not post because the CQ was full. The
     * backend never has more requests in flight than CQ entries, so this stays false.
     */
    public boolean hasOverflow() {
        return ((int) U32.getOpaque(sqFlags, 0L) & liburing_h.IORING_SQ_CQ_OVERFLOW) != 0;
    }
}
