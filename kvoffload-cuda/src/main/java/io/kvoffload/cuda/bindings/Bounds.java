package io.kvoffload.cuda.bindings;

import java.lang.foreign.MemorySegment;

/**
 * Range checks made before any address reaches CUDA. Pure Java: they run (and are tested) on
 * machines without a GPU.
 */
public final class Bounds {
    private Bounds() {}

    /**
     * Checks that {@code [offset, offset + bytes)} lies inside {@code segment}, which must be native
     * (a heap segment may move under the garbage collector while an asynchronous copy reads it) and
     * still alive.
     */
    public static void checkHost(String name, MemorySegment segment, long offset, long bytes) {
        if (segment == null) {
            throw new IllegalArgumentException(name + " is null; a native MemorySegment is required");
        }
        if (!segment.isNative()) {
            throw new IllegalArgumentException(name + " is a heap segment; allowed: native segments only"
                    + " (the GPU copies asynchronously and the garbage collector may move heap memory)");
        }
        if (!segment.scope().isAlive()) {
            throw new IllegalStateException(name + " belongs to a closed arena");
        }
        checkRange(name, segment.byteSize(), offset, bytes);
    }

    /** Checks that {@code [offset, offset + bytes)} lies inside the open allocation {@code memory}. */
    public static void checkDevice(String name, DeviceMemory memory, long offset, long bytes) {
        if (memory == null) {
            throw new IllegalArgumentException(name + " is null; a device allocation is required");
        }
        if (memory.isClosed()) {
            throw new IllegalStateException(name + " (" + memory + ") was freed");
        }
        checkRange(name, memory.byteSize(), offset, bytes);
    }

    /** Checks {@code 0 <= offset}, {@code 0 <= bytes} and {@code offset + bytes <= size} without overflow. */
    public static void checkRange(String name, long size, long offset, long bytes) {
        if (offset < 0 || bytes < 0 || offset > size || bytes > size - offset) {
            throw new IndexOutOfBoundsException(name + ": range [" + offset + ", " + offset + " + " + bytes
                    + ") is outside the buffer of " + size + " bytes; allowed: 0 <= offset, 0 <= bytes,"
                    + " offset + bytes <= " + size);
        }
    }
}
