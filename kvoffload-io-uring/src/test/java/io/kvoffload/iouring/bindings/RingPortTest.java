package io.kvoffload.iouring.bindings;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.iouring.IoUringRequired;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The Java ports of liburing's inline ring helpers against liburing itself (its exported
 * {@code io_uring_get_sqe} and {@code io_uring_peek_batch_cqe}), and the bounds fence in front of
 * the kernel.
 */
@Timeout(30)
@SuppressWarnings("restricted")
@ExtendWith(IoUringRequired.class)
class RingPortTest {
    @Test
    void portedGetSqeClaimsTheSameEntriesAsLiburing() throws Exception {
        try (IoUringRing ring = IoUringRing.create(8, 0, 0)) {
            SubmissionQueue sq = ring.sq();
            assertEquals(8, sq.entries());
            for (int round = 0; round < 3; round++) {
                for (int i = 0; i < 8; i++) {
                    if (i % 2 == 0) {
                        int index = sq.getSqe();
                        assertTrue(index >= 0);
                        sq.prepRw(liburing_h.IORING_OP_NOP, index, -1, 0, 0, 0);
                        sq.setData64(index, round * 100L + i);
                    } else {
                        MemorySegment lib = liburing_h.io_uring_get_sqe(ring.struct());
                        int expected = (int) ((lib.address() - sq.sqe(0).address()) / io_uring_sqe.sizeof());
                        assertEquals(sq.sqe(expected).address(), lib.address());
                        MemorySegment sqe = lib.reinterpret(io_uring_sqe.sizeof());
                        // Fill it through the struct accessors, as a C caller would.
                        io_uring_sqe.opcode(sqe, (byte) liburing_h.IORING_OP_NOP);
                        io_uring_sqe.flags(sqe, (byte) 0);
                        io_uring_sqe.fd(sqe, -1);
                        io_uring_sqe.user_data(sqe, round * 100L + i);
                    }
                    assertEquals(i + 1, sq.ready());
                }
                assertEquals(-1, sq.getSqe(), "the SQ is full");
                assertEquals(MemorySegment.NULL, liburing_h.io_uring_get_sqe(ring.struct()), "liburing agrees");
                assertEquals(8, ring.submitAndWait(8));
                assertEquals(0, sq.ready());
                CompletionQueue cq = ring.cq();
                assertEquals(8, cq.ready());
                // liburing's view of the same completions, before our port consumes them.
                try (Arena a = Arena.ofConfined()) {
                    MemorySegment ptrs = a.allocate(ValueLayout.ADDRESS, 8);
                    assertEquals(8, liburing_h.io_uring_peek_batch_cqe(ring.struct(), ptrs, 8));
                    int head = cq.head();
                    for (int k = 0; k < 8; k++) {
                        assertEquals(ptrs.getAtIndex(ValueLayout.ADDRESS, k).address(), cq.cqeAddress(head + k));
                        assertEquals(round * 100L + k, cq.userData(head + k));
                        assertEquals(0, cq.res(head + k));
                    }
                }
                for (int k = 0; k < 8; k++) {
                    assertTrue(cq.peek() >= 0);
                    cq.seen();
                }
                assertEquals(-1, cq.peek());
                assertEquals(0, cq.ready());
                assertFalse(cq.hasOverflow());
            }
        }
    }

    @Test
    void waitCqesSeesWhatTheNopProduced() throws Exception {
        try (IoUringRing ring = IoUringRing.create(4, 0, 0); Arena a = Arena.ofConfined()) {
            assertTrue(ring.sq().enqueueNop(77));
            assertEquals(1, ring.submit());
            MemorySegment cqePtr = a.allocate(ValueLayout.ADDRESS);
            assertEquals(0, liburing_h.io_uring_wait_cqes(ring.struct(), cqePtr, 1, MemorySegment.NULL,
                    MemorySegment.NULL));
            MemorySegment cqe = cqePtr.get(ValueLayout.ADDRESS, 0).reinterpret(io_uring_cqe.sizeof());
            assertEquals(77, io_uring_cqe.user_data(cqe));
            assertEquals(cqe.address(), ring.cq().cqeAddress(ring.cq().head()));
            ring.cq().advance(1);
            assertTrue(ring.sq().enqueueNop(78));
            // __io_uring_get_cqe enters the kernel but does not publish the SQ tail: submit first.
            assertEquals(1, ring.submit());
            assertEquals(0, liburing_h.__io_uring_get_cqe(ring.struct(), cqePtr, 0, 1, MemorySegment.NULL));
            assertEquals(78, io_uring_cqe.user_data(cqePtr.get(ValueLayout.ADDRESS, 0).reinterpret(16)));
            ring.cq().seen();
            assertEquals(0, ring.cq().ready());
        }
    }

    @Test
    void fenceRejectsRangesOutsideTheSegmentBeforeClaimingAnSqe() throws Exception {
        try (IoUringRing ring = IoUringRing.create(4, 0, 2); Arena a = Arena.ofConfined()) {
            SubmissionQueue sq = ring.sq();
            MemorySegment buf = a.allocate(8192, 4096);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> sq.enqueueRw(false, 0, 0, buf, 4096, 8192, 0, -1, 0));
            assertTrue(e.getMessage().contains("bufferOffset = 4096") && e.getMessage().contains("0..0"),
                    e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> sq.enqueueRw(false, 0, 0, buf, 0, 0, 0, -1, 0));
            assertTrue(e.getMessage().contains("length = 0"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class,
                    () -> sq.enqueueRw(false, 0, 0, MemorySegment.ofArray(new byte[4096]), 0, 4096, 0, -1, 0));
            assertTrue(e.getMessage().contains("native"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class,
                    () -> sq.enqueueRw(false, 0, 0, buf.asReadOnly(), 0, 4096, 0, -1, 0));
            assertTrue(e.getMessage().contains("read-only"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> sq.enqueueRw(true, 0, 0, buf, 0, 4096, -1, -1, 0));
            assertTrue(e.getMessage().contains("fileOffset = -1"), e.getMessage());
            // Fixed buffers: the transfer must lie in the registered range of that index.
            e = assertThrows(IllegalArgumentException.class, () -> sq.enqueueRw(false, 0, 0, buf, 0, 4096, 0, 0, 0));
            assertTrue(e.getMessage().contains("names no registered buffer"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> sq.enqueueRw(false, 0, 0, buf, 0, 4096, 0, 5, 0));
            assertTrue(e.getMessage().contains("bufIndex = 5") && e.getMessage().contains("0..1"), e.getMessage());
            assertEquals(0, ring.registerBuffersSparse());
            assertEquals(0, ring.updateBuffer(1, buf.asSlice(0, 4096)));
            assertTrue(ring.bufferRegistered(1));
            e = assertThrows(IllegalArgumentException.class, () -> sq.enqueueRw(false, 0, 0, buf, 0, 8192, 0, 1, 0));
            assertTrue(e.getMessage().contains("outside registered buffer 1"), e.getMessage());
            assertEquals(0, sq.ready(), "no SQE was claimed by a rejected request");
            assertTrue(sq.enqueueRw(false, 0, 0, buf, 0, 4096, 0, 1, 0));
            assertEquals(1, sq.ready());
            assertEquals(0, ring.clearBuffer(1));
            assertFalse(ring.bufferRegistered(1));
            e = assertThrows(IllegalArgumentException.class,
                    () -> ring.updateBuffer(0, MemorySegment.ofAddress(buf.address()).reinterpret((1L << 30) + 4096)));
            assertTrue(e.getMessage().contains("1073741824-byte limit"), e.getMessage());
            assertEquals(0, ring.unregisterBuffers());
        }
    }

    @Test
    void createRejectsBadArgumentsAndReportsKernelErrors() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> IoUringRing.create(0, 0, 0));
        assertTrue(e.getMessage().contains("entries = 0") && e.getMessage().contains("1..32768"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> IoUringRing.create(8, 0, 1 << 15));
        assertTrue(e.getMessage().contains("bufferSlots = 32768"), e.getMessage());
        // An undefined setup flag: the kernel says EINVAL and the exception carries it.
        IoUringException k = assertThrows(IoUringException.class, () -> IoUringRing.create(8, 1 << 30, 0));
        assertEquals(libc_h.EINVAL, k.errno());
        assertTrue(k.getMessage().contains("EINVAL (Invalid argument)"), k.getMessage());
    }
}
