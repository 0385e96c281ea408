package io.kvoffload.iouring.bindings;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;

/**
 * {@code struct io_cqring_offsets}: where the kernel placed the CQ ring members in the mapping.
 *
 * <p>Mirrors <a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing/io_uring.h#L396-L406">liburing/io_uring.h lines 396-406</a> at liburing-2.3.
 */
@SuppressWarnings({"unused", "checkstyle:TypeName"})
public final class io_cqring_offsets {
    private io_cqring_offsets() {}

    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
                    liburing_h.C_INT.withName("head"),
                    liburing_h.C_INT.withName("tail"),
                    liburing_h.C_INT.withName("ring_mask"),
                    liburing_h.C_INT.withName("ring_entries"),
                    liburing_h.C_INT.withName("overflow"),
                    liburing_h.C_INT.withName("cqes"),
                    liburing_h.C_INT.withName("flags"),
                    liburing_h.C_INT.withName("resv1"),
                    liburing_h.C_LONG_LONG.withName("resv2")
            ).withName("io_cqring_offsets");

    public static GroupLayout layout() {
        return $LAYOUT;
    }

    /** {@code sizeof(struct io_cqring_offsets)}: 40 bytes on x86_64. */
    public static long sizeof() {
        return $LAYOUT.byteSize();
    }

    private static final long head$OFFSET = 0;

    public static long head$offset() {
        return head$OFFSET;
    }

    private static final ValueLayout.OfInt head$LAYOUT = (ValueLayout.OfInt) $LAYOUT.select(groupElement("head"));

    public static ValueLayout.OfInt head$layout() {
        return head$LAYOUT;
    }

    public static int head(MemorySegment struct) {
        return struct.get(head$LAYOUT, head$OFFSET);
    }

    public static void head(MemorySegment struct, int fieldValue) {
        struct.set(head$LAYOUT, head$OFFSET, fieldValue);
    }

    private static final long tail$OFFSET = 4;

    public static long tail$offset() {
        return tail$OFFSET;
    }

    private static final ValueLayout.OfInt tail$LAYOUT = (ValueLayout.OfInt) $LAYOUT.select(groupElement("tail"));

    public static ValueLayout.OfInt tail$layout() {
        return tail$LAYOUT;
    }

    public static int tail(MemorySegment struct) {
        return struct.get(tail$LAYOUT, tail$OFFSET);
    }

    public static void tail(MemorySegment struct, int fieldValue) {
        struct.set(tail$LAYOUT, tail$OFFSET, fieldValue);
    }

    private static final long ring_mask$OFFSET = 8;

    public static long ring_mask$offset() {
        return ring_mask$OFFSET;
    }

    private static final ValueLayout.OfInt ring_mask$LAYOUT = (ValueLayout.OfInt) $LAYOUT.select(groupElement("ring_mask"));

    public static ValueLayout.OfInt ring_mask$layout() {
        return ring_mask$LAYOUT;
    }

    public static int ring_mask(MemorySegment struct) {
        return struct.get(ring_mask$LAYOUT, ring_mask$OFFSET);
    }

    public static void ring_mask(MemorySegment struct, int fieldValue) {
        struct.set(ring_mask$LAYOUT, ring_mask$OFFSET, fieldValue);
    }

    private static final long ring_entries$OFFSET = 12;

    public static long ring_entries$offset() {
        return ring_entries$OFFSET;
    }

    private static final ValueLayout.OfInt ring_entries$LAYOUT = (ValueLayout.OfInt) $LAYOUT.select(groupElement("ring_entries"));

    public static ValueLayout.OfInt ring_entries$layout() {
        return ring_entries$LAYOUT;
    }

    public static int ring_entries(MemorySegment struct) {
        return struct.get(ring_entries$LAYOUT, ring_entries$OFFSET);
    }

    public static void ring_entries(MemorySegment struct, int fieldValue) {
        struct.set(ring_entries$LAYOUT, ring_entries$OFFSET, fieldValue);
    }

    private static final long overflow$OFFSET = 16;

    public static long overflow$offset() {
        return overflow$OFFSET;
    }

    private static final ValueLayout.OfInt overflow$LAYOUT = (ValueLayout.OfInt) $LAYOUT.select(groupElement("overflow"));

    public static ValueLayout.OfInt overflow$layout() {
        return overflow$LAYOUT;
    }

    public static int overflow(MemorySegment struct) {
        return struct.get(overflow$LAYOUT, overflow$OFFSET);
    }

    public static void overflow(MemorySegment struct, int fieldValue) {
        struct.set(overflow$LAYOUT, overflow$OFFSET, fieldValue);
    }

    private static final long cqes$OFFSET = 20;

    public static long cqes$offset() {
        return cqes$OFFSET;
    }

    private static final ValueLayout.OfInt cqes$LAYOUT = (ValueLayout.OfInt) $LAYOUT.select(groupElement("cqes"));

    public static ValueLayout.OfInt cqes$layout() {
        return cqes$LAYOUT;
    }

    public static int cqes(MemorySegment struct) {
        return struct.get(cqes$LAYOUT, cqes$OFFSET);
    }

    public static void cqes(MemorySegment struct, int fieldValue) {
        struct.set(cqes$LAYOUT, cqes$OFFSET, fieldValue);
    }

    private static final long flags$OFFSET = 24;

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

    private static final long resv1$OFFSET = 28;

    public static long resv1$offset() {
        return resv1$OFFSET;
    }

    private static final ValueLayout.OfInt resv1$LAYOUT = (ValueLayout.OfInt) $LAYOUT.select(groupElement("resv1"));

    public static ValueLayout.OfInt resv1$layout() {
        return resv1$LAYOUT;
    }

    public static int resv1(MemorySegment struct) {
        return struct.get(resv1$LAYOUT, resv1$OFFSET);
    }

    public static void resv1(MemorySegment struct, int fieldValue) {
        struct.set(resv1$LAYOUT, resv1$OFFSET, fieldValue);
    }

    private static final long resv2$OFFSET = 32;

    public static long resv2$offset() {
        return resv2$OFFSET;
    }

    private static final ValueLayout.OfLong resv2$LAYOUT = (ValueLayout.OfLong) $LAYOUT.select(groupElement("resv2"));

    public static ValueLayout.OfLong resv2$layout() {
        return resv2$LAYOUT;
    }

    public static long resv2(MemorySegment struct) {
        return struct.get(resv2$LAYOUT, resv2$OFFSET);
    }

    public static void resv2(MemorySegment struct, long fieldValue) {
        struct.set(resv2$LAYOUT, resv2$OFFSET, fieldValue);
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
