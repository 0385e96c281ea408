package io.kvoffload.iouring.bindings;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;

/**
 * {@code struct io_uring_params}: passed to io_uring_setup(2) (entries, flags) and filled by it
 * (actual sizes, features, mmap offsets).
 *
 * <p>Mirrors <a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing/io_uring.h#L427-L438">liburing/io_uring.h lines 427-438</a> at liburing-2.3.
 */
@SuppressWarnings({"unused", "checkstyle:TypeName"})
public final class io_uring_params {
    private io_uring_params() {}

    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
                    liburing_h.C_INT.withName("sq_entries"),
                    liburing_h.C_INT.withName("cq_entries"),
                    liburing_h.C_INT.withName("flags"),
                    liburing_h.C_INT.withName("sq_thread_cpu"),
                    liburing_h.C_INT.withName("sq_thread_idle"),
                    liburing_h.C_INT.withName("features"),
                    liburing_h.C_INT.withName("wq_fd"),
                    MemoryLayout.sequenceLayout(3, liburing_h.C_INT).withName("resv"),
                    io_sqring_offsets.layout().withName("sq_off"),
                    io_cqring_offsets.layout().withName("cq_off")
            ).withName("io_uring_params");

    public static GroupLayout layout() {
        return $LAYOUT;
    }

    /** {@code sizeof(struct io_uring_params)}: 120 bytes on x86_64. */
    public static long sizeof() {
        return $LAYOUT.byteSize();
    }

    private static final long sq_entries$OFFSET = 0;

    public static long sq_entries$offset() {
        return sq_entries$OFFSET;
    }

    private static final ValueLayout.OfInt sq_entries$LAYOUT = (ValueLayout.OfInt) $LAYOUT.select(groupElement("sq_entries"));

    public static ValueLayout.OfInt sq_entries$layout() {
        return sq_entries$LAYOUT;
    }

    public static int sq_entries(MemorySegment struct) {
        return struct.get(sq_entries$LAYOUT, sq_entries$OFFSET);
    }

    public static void sq_entries(MemorySegment struct, int fieldValue) {
        struct.set(sq_entries$LAYOUT, sq_entries$OFFSET, fieldValue);
    }

    private static final long cq_entries$OFFSET = 4;

    public static long cq_entries$offset() {
        return cq_entries$OFFSET;
    }

    private static final ValueLayout.OfInt cq_entries$LAYOUT = (ValueLayout.OfInt) $LAYOUT.select(groupElement("cq_entries"));

    public static ValueLayout.OfInt cq_entries$layout() {
        return cq_entries$LAYOUT;
    }

    public static int cq_entries(MemorySegment struct) {
        return struct.get(cq_entries$LAYOUT, cq_entries$OFFSET);
    }

    public static void cq_entries(MemorySegment struct, int fieldValue) {
        struct.set(cq_entries$LAYOUT, cq_entries$OFFSET, fieldValue);
    }

    private static final long flags$OFFSET = 8;

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

    private static final long sq_thread_cpu$OFFSET = 12;

    public static long sq_thread_cpu$offset() {
        return sq_thread_cpu$OFFSET;
    }

    private static final ValueLayout.OfInt sq_thread_cpu$LAYOUT = (ValueLayout.OfInt) $LAYOUT.select(groupElement("sq_thread_cpu"));

    public static ValueLayout.OfInt sq_thread_cpu$layout() {
        return sq_thread_cpu$LAYOUT;
    }

    public static int sq_thread_cpu(MemorySegment struct) {
        return struct.get(sq_thread_cpu$LAYOUT, sq_thread_cpu$OFFSET);
    }

    public static void sq_thread_cpu(MemorySegment struct, int fieldValue) {
        struct.set(sq_thread_cpu$LAYOUT, sq_thread_cpu$OFFSET, fieldValue);
    }

    private static final long sq_thread_idle$OFFSET = 16;

    public static long sq_thread_idle$offset() {
        return sq_thread_idle$OFFSET;
    }

    private static final ValueLayout.OfInt sq_thread_idle$LAYOUT = (ValueLayout.OfInt) $LAYOUT.select(groupElement("sq_thread_idle"));

    public static ValueLayout.OfInt sq_thread_idle$layout() {
        return sq_thread_idle$LAYOUT;
    }

    public static int sq_thread_idle(MemorySegment struct) {
        return struct.get(sq_thread_idle$LAYOUT, sq_thread_idle$OFFSET);
    }

    public static void sq_thread_idle(MemorySegment struct, int fieldValue) {
        struct.set(sq_thread_idle$LAYOUT, sq_thread_idle$OFFSET, fieldValue);
    }

    private static final long features$OFFSET = 20;

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

    private static final long wq_fd$OFFSET = 24;

    public static long wq_fd$offset() {
        return wq_fd$OFFSET;
    }

    private static final ValueLayout.OfInt wq_fd$LAYOUT = (ValueLayout.OfInt) $LAYOUT.select(groupElement("wq_fd"));

    public static ValueLayout.OfInt wq_fd$layout() {
        return wq_fd$LAYOUT;
    }

    public static int wq_fd(MemorySegment struct) {
        return struct.get(wq_fd$LAYOUT, wq_fd$OFFSET);
    }

    public static void wq_fd(MemorySegment struct, int fieldValue) {
        struct.set(wq_fd$LAYOUT, wq_fd$OFFSET, fieldValue);
    }

    private static final long resv$OFFSET = 28;

    public static long resv$offset() {
        return resv$OFFSET;
    }

    public static int resv(MemorySegment struct, long index) {
        return struct.getAtIndex(liburing_h.C_INT, resv$OFFSET / liburing_h.C_INT.byteSize() + index);
    }

    private static final long sq_off$OFFSET = 40;

    public static long sq_off$offset() {
        return sq_off$OFFSET;
    }

    /** The embedded {@code sq_off} as a slice of {@code struct}. */
    public static MemorySegment sq_off(MemorySegment struct) {
        return struct.asSlice(sq_off$OFFSET, io_sqring_offsets.sizeof());
    }

    private static final long cq_off$OFFSET = 80;

    public static long cq_off$offset() {
        return cq_off$OFFSET;
    }

    /** The embedded {@code cq_off} as a slice of {@code struct}. */
    public static MemorySegment cq_off(MemorySegment struct) {
        return struct.asSlice(cq_off$OFFSET, io_cqring_offsets.sizeof());
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
