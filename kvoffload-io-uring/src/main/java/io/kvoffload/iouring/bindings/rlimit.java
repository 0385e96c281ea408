package io.kvoffload.iouring.bindings;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;

/**
 * {@code struct rlimit} from {@code <sys/resource.h>}: read with getrlimit(RLIMIT_MEMLOCK) to name
 * the limit when registering fixed buffers fails.
 */
@SuppressWarnings({"unused", "checkstyle:TypeName"})
public final class rlimit {
    private rlimit() {}

    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
                    liburing_h.C_LONG_LONG.withName("rlim_cur"),
                    liburing_h.C_LONG_LONG.withName("rlim_max")
            ).withName("rlimit");

    public static GroupLayout layout() {
        return $LAYOUT;
    }

    /** {@code sizeof(struct rlimit)}: 16 bytes on x86_64. */
    public static long sizeof() {
        return $LAYOUT.byteSize();
    }

    private static final long rlim_cur$OFFSET = 0;

    public static long rlim_cur$offset() {
        return rlim_cur$OFFSET;
    }

    private static final ValueLayout.OfLong rlim_cur$LAYOUT = (ValueLayout.OfLong) $LAYOUT.select(groupElement("rlim_cur"));

    public static ValueLayout.OfLong rlim_cur$layout() {
        return rlim_cur$LAYOUT;
    }

    public static long rlim_cur(MemorySegment struct) {
        return struct.get(rlim_cur$LAYOUT, rlim_cur$OFFSET);
    }

    public static void rlim_cur(MemorySegment struct, long fieldValue) {
        struct.set(rlim_cur$LAYOUT, rlim_cur$OFFSET, fieldValue);
    }

    private static final long rlim_max$OFFSET = 8;

    public static long rlim_max$offset() {
        return rlim_max$OFFSET;
    }

    private static final ValueLayout.OfLong rlim_max$LAYOUT = (ValueLayout.OfLong) $LAYOUT.select(groupElement("rlim_max"));

    public static ValueLayout.OfLong rlim_max$layout() {
        return rlim_max$LAYOUT;
    }

    public static long rlim_max(MemorySegment struct) {
        return struct.get(rlim_max$LAYOUT, rlim_max$OFFSET);
    }

    public static void rlim_max(MemorySegment struct, long fieldValue) {
        struct.set(rlim_max$LAYOUT, rlim_max$OFFSET, fieldValue);
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
