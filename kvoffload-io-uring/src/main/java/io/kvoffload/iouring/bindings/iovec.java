package io.kvoffload.iouring.bindings;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;

import java.lang.foreign.AddressLayout;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;

/**
 * {@code struct iovec} from {@code <sys/uio.h>} (glibc bits/types/struct_iovec.h): one buffer
 * handed to {@code io_uring_register_buffers*}.
 *
 * <p>Used by <a href="https://github.com/axboe/liburing/blob/liburing-2.3/src/include/liburing.h#L186-L195">liburing.h lines 186-195</a> at liburing-2.3.
 */
@SuppressWarnings({"unused", "checkstyle:TypeName"})
public final class iovec {
    private iovec() {}

    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
                    liburing_h.C_POINTER.withName("iov_base"),
                    liburing_h.C_LONG.withName("iov_len")
            ).withName("iovec");

    public static GroupLayout layout() {
        return $LAYOUT;
    }

    /** {@code sizeof(struct iovec)}: 16 bytes on x86_64. */
    public static long sizeof() {
        return $LAYOUT.byteSize();
    }

    private static final long iov_base$OFFSET = 0;

    public static long iov_base$offset() {
        return iov_base$OFFSET;
    }

    private static final AddressLayout iov_base$LAYOUT = (AddressLayout) $LAYOUT.select(groupElement("iov_base"));

    public static AddressLayout iov_base$layout() {
        return iov_base$LAYOUT;
    }

    /** The pointer as a zero-length segment; {@code reinterpret} it with the size it points to. */
    public static MemorySegment iov_base(MemorySegment struct) {
        return struct.get(iov_base$LAYOUT, iov_base$OFFSET);
    }

    public static void iov_base(MemorySegment struct, MemorySegment fieldValue) {
        struct.set(iov_base$LAYOUT, iov_base$OFFSET, fieldValue);
    }

    private static final long iov_len$OFFSET = 8;

    public static long iov_len$offset() {
        return iov_len$OFFSET;
    }

    private static final ValueLayout.OfLong iov_len$LAYOUT = (ValueLayout.OfLong) $LAYOUT.select(groupElement("iov_len"));

    public static ValueLayout.OfLong iov_len$layout() {
        return iov_len$LAYOUT;
    }

    public static long iov_len(MemorySegment struct) {
        return struct.get(iov_len$LAYOUT, iov_len$OFFSET);
    }

    public static void iov_len(MemorySegment struct, long fieldValue) {
        struct.set(iov_len$LAYOUT, iov_len$OFFSET, fieldValue);
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
