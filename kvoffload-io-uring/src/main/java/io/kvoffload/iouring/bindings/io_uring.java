package io.kvoffload.iouring.bindings;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;

/**
 * {@code struct io_uring}: one ring as liburing keeps it (216 bytes on x86_64). Allocated by us,
 * filled by {@code io_uring_queue_init_params}, released by {@code io_uring_queue_exit}.
 *
 * <p>Mirrors <a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing.h#L123-L134">liburing.h lines 123-134</a> at liburing-2.3.
 */
@SuppressWarnings({"unused", "checkstyle:TypeName"})
public final class io_uring {
    private io_uring() {}

    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
                    io_uring_sq.layout().withName("sq"),
                    io_uring_cq.layout().withName("cq"),
                    liburing_h.C_INT.withName("flags"),
                    liburing_h.C_INT.withName("ring_fd"),
                    liburing_h.C_INT.withName("features"),
                    liburing_h.C_INT.withName("enter_ring_fd"),
                    liburing_h.C_CHAR.withName("int_flags"),
                    MemoryLayout.sequenceLayout(3, liburing_h.C_CHAR).withName("pad"),
                    liburing_h.C_INT.withName("pad2")
            ).withName("io_uring");

    public static GroupLayout layout() {
        return $LAYOUT;
    }

    /** {@code sizeof(struct io_uring)}: 216 bytes on x86_64. */
    public static long sizeof() {
        return $LAYOUT.byteSize();
    }

    private static final long sq$OFFSET = 0;

    public static long sq$offset() {
        return sq$OFFSET;
    }

    /** The embedded {@code sq} as a slice of {@code struct}. */
    public static MemorySegment sq(MemorySegment struct) {
        return struct.asSlice(sq$OFFSET, io_uring_sq.sizeof());
    }

    private static final long cq$OFFSET = 104;

    public static long cq$offset() {
        return cq$OFFSET;
    }

    /** The embedded {@code cq} as a slice of {@code struct}. */
    public static MemorySegment cq(MemorySegment struct) {
        return struct.asSlice(cq$OFFSET, io_uring_cq.sizeof());
    }

    private static final long flags$OFFSET = 192;

    public static long flags$offset() {
        return flags$OFFSET;
    }

    private static final ValueLayout.OfInt flags$LAYOUT = (ValueLayout.OfInt) $LAYOUT.select(groupElement("flags"));

    public static ValueLayout.OfInt flags$layout() {
        return flags$LAYOUT;
    }

    public static int flags(MemorySegment struct) {
        return struct.get(flags$LAYOUT, flags$OFFSET);
    }

    public static void flags(MemorySegment struct, int fieldValue) {
        struct.set(flags$LAYOUT, flags$OFFSET, fieldValue);
    }

    private static final long ring_fd$OFFSET = 196;

    public static long ring_fd$offset() {
        return ring_fd$OFFSET;
    }

    private static final ValueLayout.OfInt ring_fd$LAYOUT = (ValueLayout.OfInt) $LAYOUT.select(groupElement("ring_fd"));

    public static ValueLayout.OfInt ring_fd$layout() {
        return ring_fd$LAYOUT;
    }

    public static int ring_fd(MemorySegment struct) {
        return struct.get(ring_fd$LAYOUT, ring_fd$OFFSET);
    }

    public static void ring_fd(MemorySegment struct, int fieldValue) {
        struct.set(ring_fd$LAYOUT, ring_fd$OFFSET, fieldValue);
    }

    private static final long features$OFFSET = 200;

    public static long features$offset() {
        return features$OFFSET;
    }

    private static final ValueLayout.OfInt features$LAYOUT = (ValueLayout.OfInt) $LAYOUT.select(groupElement("features"));

    public static ValueLayout.OfInt features$layout() {
        return features$LAYOUT;
    }

    public static int features(MemorySegment struct) {
        return struct.get(features$LAYOUT, features$OFFSET);
    }

    public static void features(MemorySegment struct, int fieldValue) {
        struct.set(features$LAYOUT, features$OFFSET, fieldValue);
    }

    private static final long enter_ring_fd$OFFSET = 204;

    public static long enter_ring_fd$offset() {
        return enter_ring_fd$OFFSET;
    }

    private static final ValueLayout.OfInt enter_ring_fd$LAYOUT = (ValueLayout.OfInt) $LAYOUT.select(groupElement("enter_ring_fd"));

    public static ValueLayout.OfInt enter_ring_fd$layout() {
        return enter_ring_fd$LAYOUT;
    }

    public static int enter_ring_fd(MemorySegment struct) {
        return struct.get(enter_ring_fd$LAYOUT, enter_ring_fd$OFFSET);
    }

    public static void enter_ring_fd(MemorySegment struct, int fieldValue) {
        struct.set(enter_ring_fd$LAYOUT, enter_ring_fd$OFFSET, fieldValue);
    }

    private static final long int_flags$OFFSET = 208;

    public static long int_flags$offset() {
        return int_flags$OFFSET;
    }

    private static final ValueLayout.OfByte int_flags$LAYOUT = (ValueLayout.OfByte) $LAYOUT.select(groupElement("int_flags"));

    public static ValueLayout.OfByte int_flags$layout() {
        return int_flags$LAYOUT;
    }

    public static byte int_flags(MemorySegment struct) {
        return struct.get(int_flags$LAYOUT, int_flags$OFFSET);
    }

    public static void int_flags(MemorySegment struct, byte fieldValue) {
        struct.set(int_flags$LAYOUT, int_flags$OFFSET, fieldValue);
    }

    private static final long pad$OFFSET = 209;

    public static long pad$offset() {
        return pad$OFFSET;
    }

    public static byte pad(MemorySegment struct, long index) {
        return struct.getAtIndex(liburing_h.C_CHAR, pad$OFFSET / liburing_h.C_CHAR.byteSize() + index);
    }

    private static final long pad2$OFFSET = 212;

    public static long pad2$offset() {
        return pad2$OFFSET;
    }

    private static final ValueLayout.OfInt pad2$LAYOUT = (ValueLayout.OfInt) $LAYOUT.select(groupElement("pad2"));

    public static ValueLayout.OfInt pad2$layout() {
        return pad2$LAYOUT;
    }

    public static int pad2(MemorySegment struct) {
        return struct.get(pad2$LAYOUT, pad2$OFFSET);
    }

    public static void pad2(MemorySegment struct, int fieldValue) {
        struct.set(pad2$LAYOUT, pad2$OFFSET, fieldValue);
    }

    public static MemorySegment asSlice(MemorySegment array, long index) {
        return array.asSlice(index * sizeof(), sizeof());
    }

    public static MemorySegment allocate(SegmentAllocator allocator) {
        return allocator.allocate($LAYOUT);
    }

    public static MemorySegment allocateArray(long elementCount, SegmentAllocator allocator) {
        return allocator.allocate(MemoryLayout.sequenceLayout(elementCount, $LAYOUT));
    }
}
