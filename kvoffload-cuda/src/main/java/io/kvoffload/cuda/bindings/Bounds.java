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

    /**
     * Checks that {@code rows.length} rows of {@code rowBytes}, the first at {@code offset} and each
     * next one {@code pitch} bytes further, lie inside the open allocation {@code memory}, with
     * {@code pitch >= rowBytes} so no row overwrites the next.
     */
    public static void checkDeviceRows(String name, DeviceMemory memory, long offset, long pitch, long rowBytes,
            int rows) {
        if (rows < 1) {
            throw new IllegalArgumentException(name + ": rows = " + rows + "; allowed: 1 or more");
        }
        if (rowBytes < 0 || (rows > 1 && pitch < rowBytes)) {
            throw new IllegalArgumentException(name + ": pitch = " + pitch + ", rowBytes = " + rowBytes
                    + "; allowed: 0 <= rowBytes <= pitch");
        }
        long span;
        try {
            span = Math.addExact(Math.multiplyExact(rows - 1L, pitch), rowBytes);
        } catch (ArithmeticException e) {
            throw new IndexOutOfBoundsException(name + ": " + rows + " rows of " + rowBytes + " bytes at pitch " + pitch
                    + " overflow a long");
        }
        checkDevice(name, memory, offset, span);
    }

    /**
     * The distance between consecutive rows when each row starts the same number of bytes after the
     * previous one and that distance keeps {@code rowBytes} of a row clear of the next, so one
     * strided copy (cudaMemcpy2D) reads exactly the rows' first {@code rowBytes}; -1 otherwise (fewer
     * than two rows, unequal or descending spacing, overlap). Reads addresses only: the caller has
     * checked each row with {@link #checkHost}.
     */
    public static long uniformStride(MemorySegment[] rows, long rowBytes) {
        if (rows == null || rows.length < 2) {
            return -1;
        }
        long stride = rows[1].address() - rows[0].address();
        if (stride < Math.max(rowBytes, 1)) {
            return -1;
        }
        for (int i = 2; i < rows.length; i++) {
            if (rows[i].address() - rows[i - 1].address() != stride) {
                return -1;
            }
        }
        return stride;
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
