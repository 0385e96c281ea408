package io.kvoffload.iouring.bindings;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;

/**
 * {@code struct io_uring_cqe}: one completion queue entry, 16 bytes (rings are set up without
 * {@code IORING_SETUP_CQE32}, so {@code big_cqe[]} is empty).
 *
 * <p>Mirrors <a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing/io_uring.h#L337-L347">
 * liburing/io_uring.h lines 337-347</a> at liburing-2.3.
 */
@SuppressWarnings({"unused", "checkstyle:TypeName"})
public final class io_uring_cqe {
    private io_uring_cqe() {}

    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
                    liburing_h.C_LONG_LONG.withName("user_data"),
                    liburing_h.C_INT.withName("res"),
                    liburing_h.C_INT.withName("flags"),
                    MemoryLayout.sequenceLayout(0, liburing_h.C_LONG_LONG).withName("big_cqe"))
            .withName("io_uring_cqe");

    public static GroupLayout layout() {
        return $LAYOUT;
    }

    public static long sizeof() {
        return $LAYOUT.byteSize();
    }

    private static final ValueLayout.OfLong user_data$LAYOUT =
            (ValueLayout.OfLong) $LAYOUT.select(groupElement("user_data"));
    private static final long user_data$OFFSET = 0;

    public static ValueLayout.OfLong user_data$layout() {
        return user_data$LAYOUT;
    }

    public static long user_data$offset() {
        return user_data$OFFSET;
    }

    public static long user_data(MemorySegment struct) {
        return struct.get(user_data$LAYOUT, user_data$OFFSET);
    }

    public static void user_data(MemorySegment struct, long fieldValue) {
        struct.set(user_data$LAYOUT, user_data$OFFSET, fieldValue);
    }

    private static final ValueLayout.OfInt res$LAYOUT = (ValueLayout.OfInt) $LAYOUT.select(groupElement("res"));
    private static final long res$OFFSET = 8;

    public static ValueLayout.OfInt res$layout() {
        return res$LAYOUT;
    }

    public static long res$offset() {
        return res$OFFSET;
    }

    public static int res(MemorySegment struct) {
        return struct.get(res$LAYOUT, res$OFFSET);
    }

    public static void res(MemorySegment struct, int fieldValue) {
        struct.set(res$LAYOUT, res$OFFSET, fieldValue);
    }

    private static final ValueLayout.OfInt flags$LAYOUT = (ValueLayout.OfInt) $LAYOUT.select(groupElement("flags"));
    private static final long flags$OFFSET = 12;

    public static long flags$offset() {
        return flags$OFFSET;
    }

    public static int flags(MemorySegment struct) {
        return struct.get(flags$LAYOUT, flags$OFFSET);
    }

    public static void flags(MemorySegment struct, int fieldValue) {
        struct.set(flags$LAYOUT, flags$OFFSET, fieldValue);
    }

    private static final long big_cqe$OFFSET = 16;

    /** Offset of {@code big_cqe[]}: the end of a 16-byte CQE (rings here never use CQE32). */
    public static long big_cqe$offset() {
        return big_cqe$OFFSET;
    }

    public static MemorySegment asSlice(MemorySegment array, long index) {
        return array.asSlice(index * sizeof(), sizeof());
    }

    public static MemorySegment allocate(SegmentAllocator allocator) {
        return allocator.allocate($LAYOUT);
    }
}
