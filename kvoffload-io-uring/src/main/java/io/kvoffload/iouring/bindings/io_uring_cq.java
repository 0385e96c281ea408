package io.kvoffload.iouring.bindings;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;

import java.lang.foreign.AddressLayout;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;

/**
 * {@code struct io_uring_cq}: liburing's view of the completion ring; the {@code k*} members point
 * into memory shared with the kernel.
 *
 * <p>Mirrors <a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing.h#L103-L121">liburing.h lines 103-121</a> at liburing-2.3.
 */
@SuppressWarnings({"unused", "checkstyle:TypeName"})
public final class io_uring_cq {
    private io_uring_cq() {}

    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
                    liburing_h.C_POINTER.withName("khead"),
                    liburing_h.C_POINTER.withName("ktail"),
                    liburing_h.C_POINTER.withName("kring_mask"),
                    liburing_h.C_POINTER.withName("kring_entries"),
                    liburing_h.C_POINTER.withName("kflags"),
                    liburing_h.C_POINTER.withName("koverflow"),
                    liburing_h.C_POINTER.withName("cqes"),
                    liburing_h.C_LONG.withName("ring_sz"),
                    liburing_h.C_POINTER.withName("ring_ptr"),
                    liburing_h.C_INT.withName("ring_mask"),
                    liburing_h.C_INT.withName("ring_entries"),
                    MemoryLayout.sequenceLayout(2, liburing_h.C_INT).withName("pad")
            ).withName("io_uring_cq");

    public static GroupLayout layout() {
        return $LAYOUT;
    }

    /** {@code sizeof(struct io_uring_cq)}: 88 bytes on x86_64. */
    public static long sizeof() {
        return $LAYOUT.byteSize();
    }

    private static final long khead$OFFSET = 0;

    public static long khead$offset() {
        return khead$OFFSET;
    }

    private static final AddressLayout khead$LAYOUT = (AddressLayout) $LAYOUT.select(groupElement("khead"));

    public static AddressLayout khead$layout() {
        return khead$LAYOUT;
    }

    /** The pointer as a zero-length segment; {@code reinterpret} it with the size it points to. */
    public static MemorySegment khead(MemorySegment struct) {
        return struct.get(khead$LAYOUT, khead$OFFSET);
    }

    public static void khead(MemorySegment struct, MemorySegment fieldValue) {
        struct.set(khead$LAYOUT, khead$OFFSET, fieldValue);
    }

    private static final long ktail$OFFSET = 8;

    public static long ktail$offset() {
        return ktail$OFFSET;
    }

    private static final AddressLayout ktail$LAYOUT = (AddressLayout) $LAYOUT.select(groupElement("ktail"));

    public static AddressLayout ktail$layout() {
        return ktail$LAYOUT;
    }

    /** The pointer as a zero-length segment; {@code reinterpret} it with the size it points to. */
    public static MemorySegment ktail(MemorySegment struct) {
        return struct.get(ktail$LAYOUT, ktail$OFFSET);
    }

    public static void ktail(MemorySegment struct, MemorySegment fieldValue) {
        struct.set(ktail$LAYOUT, ktail$OFFSET, fieldValue);
    }

    private static final long kring_mask$OFFSET = 16;

    public static long kring_mask$offset() {
        return kring_mask$OFFSET;
    }

    private static final AddressLayout kring_mask$LAYOUT = (AddressLayout) $LAYOUT.select(groupElement("kring_mask"));

    public static AddressLayout kring_mask$layout() {
        return kring_mask$LAYOUT;
    }

    /** The pointer as a zero-length segment; {@code reinterpret} it with the size it points to. */
    public static MemorySegment kring_mask(MemorySegment struct) {
        return struct.get(kring_mask$LAYOUT, kring_mask$OFFSET);
    }

    public static void kring_mask(MemorySegment struct, MemorySegment fieldValue) {
        struct.set(kring_mask$LAYOUT, kring_mask$OFFSET, fieldValue);
    }

    private static final long kring_entries$OFFSET = 24;

    public static long kring_entries$offset() {
        return kring_entries$OFFSET;
    }

    private static final AddressLayout kring_entries$LAYOUT = (AddressLayout) $LAYOUT.select(groupElement("kring_entries"));

    public static AddressLayout kring_entries$layout() {
        return kring_entries$LAYOUT;
    }

    /** The pointer as a zero-length segment; {@code reinterpret} it with the size it points to. */
    public static MemorySegment kring_entries(MemorySegment struct) {
        return struct.get(kring_entries$LAYOUT, kring_entries$OFFSET);
    }

    public static void kring_entries(MemorySegment struct, MemorySegment fieldValue) {
        struct.set(kring_entries$LAYOUT, kring_entries$OFFSET, fieldValue);
    }

    private static final long kflags$OFFSET = 32;

    public static long kflags$offset() {
        return kflags$OFFSET;
    }

    private static final AddressLayout kflags$LAYOUT = (AddressLayout) $LAYOUT.select(groupElement("kflags"));

    public static AddressLayout kflags$layout() {
        return kflags$LAYOUT;
    }

    /** The pointer as a zero-length segment; {@code reinterpret} it with the size it points to. */
    public static MemorySegment kflags(MemorySegment struct) {
        return struct.get(kflags$LAYOUT, kflags$OFFSET);
    }

    public static void kflags(MemorySegment struct, MemorySegment fieldValue) {
        struct.set(kflags$LAYOUT, kflags$OFFSET, fieldValue);
    }

    private static final long koverflow$OFFSET = 40;

    public static long koverflow$offset() {
        return koverflow$OFFSET;
    }

    private static final AddressLayout koverflow$LAYOUT = (AddressLayout) $LAYOUT.select(groupElement("koverflow"));

    public static AddressLayout koverflow$layout() {
        return koverflow$LAYOUT;
    }

    /** The pointer as a zero-length segment; {@code reinterpret} it with the size it points to. */
    public static MemorySegment koverflow(MemorySegment struct) {
        return struct.get(koverflow$LAYOUT, koverflow$OFFSET);
    }

    public static void koverflow(MemorySegment struct, MemorySegment fieldValue) {
        struct.set(koverflow$LAYOUT, koverflow$OFFSET, fieldValue);
    }

    private static final long cqes$OFFSET = 48;

    public static long cqes$offset() {
        return cqes$OFFSET;
    }

    private static final AddressLayout cqes$LAYOUT = (AddressLayout) $LAYOUT.select(groupElement("cqes"));

    public static AddressLayout cqes$layout() {
        return cqes$LAYOUT;
    }

    /** The pointer as a zero-length segment; {@code reinterpret} it with the size it points to. */
    public static MemorySegment cqes(MemorySegment struct) {
        return struct.get(cqes$LAYOUT, cqes$OFFSET);
    }

    public static void cqes(MemorySegment struct, MemorySegment fieldValue) {
        struct.set(cqes$LAYOUT, cqes$OFFSET, fieldValue);
    }

    private static final long ring_sz$OFFSET = 56;

    public static long ring_sz$offset() {
        return ring_sz$OFFSET;
    }

    private static final ValueLayout.OfLong ring_sz$LAYOUT = (ValueLayout.OfLong) $LAYOUT.select(groupElement("ring_sz"));

    public static ValueLayout.OfLong ring_sz$layout() {
        return ring_sz$LAYOUT;
    }

    public static long ring_sz(MemorySegment struct) {
        return struct.get(ring_sz$LAYOUT, ring_sz$OFFSET);
    }

    public static void ring_sz(MemorySegment struct, long fieldValue) {
        struct.set(ring_sz$LAYOUT, ring_sz$OFFSET, fieldValue);
    }

    private static final long ring_ptr$OFFSET = 64;

    public static long ring_ptr$offset() {
        return ring_ptr$OFFSET;
    }

    private static final AddressLayout ring_ptr$LAYOUT = (AddressLayout) $LAYOUT.select(groupElement("ring_ptr"));

    public static AddressLayout ring_ptr$layout() {
        return ring_ptr$LAYOUT;
    }

    /** The pointer as a zero-length segment; {@code reinterpret} it with the size it points to. */
    public static MemorySegment ring_ptr(MemorySegment struct) {
        return struct.get(ring_ptr$LAYOUT, ring_ptr$OFFSET);
    }

    public static void ring_ptr(MemorySegment struct, MemorySegment fieldValue) {
        struct.set(ring_ptr$LAYOUT, ring_ptr$OFFSET, fieldValue);
    }

    private static final long ring_mask$OFFSET = 72;

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

    private static final long ring_entries$OFFSET = 76;

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

    private static final long pad$OFFSET = 80;

    public static long pad$offset() {
        return pad$OFFSET;
    }

    public static int pad(MemorySegment struct, long index) {
        return struct.getAtIndex(liburing_h.C_INT, pad$OFFSET / liburing_h.C_INT.byteSize() + index);
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
