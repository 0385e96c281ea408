package io.kvoffload.cuda.bindings;

import jcuda.driver.CUdeviceptr;
import jcuda.runtime.JCuda;

/**
 * One device allocation (cudaMalloc) with its size, so every range inside it can be checked.
 * Closing frees it; the caller has drained every stream that still uses it.
 */
public final class DeviceMemory implements AutoCloseable {
    private final DevicePtr ptr;
    private final long byteSize;
    private volatile boolean closed;

    private DeviceMemory(DevicePtr ptr, long byteSize) {
        this.ptr = ptr;
        this.byteSize = byteSize;
    }

    /** Allocates {@code bytes} (> 0) on the current device. */
    public static DeviceMemory allocate(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("bytes = " + bytes + "; allowed: 1 or more");
        }
        DevicePtr p = new DevicePtr();
        Cuda.check(JCuda.cudaMalloc(p, bytes), "cudaMalloc", bytes + " bytes");
        return new DeviceMemory(p, bytes);
    }

    public long byteSize() {
        return byteSize;
    }

    public boolean isClosed() {
        return closed;
    }

    DevicePtr ptr() {
        if (closed) {
            throw new IllegalStateException("device memory " + this + " was freed");
        }
        return ptr;
    }

    /** The device address of byte {@code offset} (for kernels), checked against the allocation. */
    public long address(long offset) {
        Bounds.checkDevice("device memory", this, offset, 0);
        return ptr.address() + offset;
    }

    /** A JCuda device pointer to byte {@code offset}, checked against the allocation. */
    public CUdeviceptr pointer(long offset) {
        Bounds.checkDevice("device memory", this, offset, 0);
        return ptr.at(offset);
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        Cuda.check(JCuda.cudaFree(ptr), "cudaFree", byteSize + " bytes");
    }

    @Override
    public String toString() {
        return "DeviceMemory[0x" + Long.toHexString(ptr.address()) + ", " + byteSize + " bytes" + (closed ? ", freed]" : "]");
    }
}
