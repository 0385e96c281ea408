package io.kvoffload.cuda.bindings;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import jcuda.runtime.JCuda;

/**
 * Host memory allocated page-locked by CUDA (cudaHostAlloc) and seen as a {@link MemorySegment}:
 * the alternative to page-locking the DRAM tier's own slabs with cudaHostRegister. The benchmark
 * uses it as the plain pinned baseline, so the two ways can be compared on a GPU.
 */
public final class PinnedHostBuffer implements AutoCloseable {
    private final HostPtr ptr;
    private final Arena arena;
    private final MemorySegment segment;
    private volatile boolean closed;

    private PinnedHostBuffer(HostPtr ptr, long bytes) {
        this.ptr = ptr;
        // The segment lives in an arena of its own, so closing the buffer invalidates it and a
        // late copy fails its bounds check instead of touching freed memory.
        this.arena = Arena.ofShared();
        this.segment = MemorySegment.ofAddress(ptr.address()).reinterpret(bytes, arena, null);
    }

    public static PinnedHostBuffer allocate(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("bytes = " + bytes + "; allowed: 1 or more");
        }
        HostPtr p = new HostPtr();
        Cuda.check(JCuda.cudaHostAlloc(p, bytes, Cuda.HOST_ALLOC_PORTABLE), "cudaHostAlloc", bytes + " bytes");
        return new PinnedHostBuffer(p, bytes);
    }

    /** The memory; do not use after {@link #close()}. */
    public MemorySegment segment() {
        if (closed) {
            throw new IllegalStateException("pinned buffer was freed");
        }
        return segment;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        long bytes = segment.byteSize();
        arena.close();
        Cuda.check(JCuda.cudaFreeHost(ptr), "cudaFreeHost", bytes + " bytes");
    }
}
