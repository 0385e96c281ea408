package io.kvoffload.spi;

import java.lang.foreign.MemorySegment;

/**
 * Told about every slab the DRAM tier allocates and frees, so a backend can register it: the
 * io_uring backend as fixed buffers, the CUDA module as page-locked host memory. Found through
 * {@link java.util.ServiceLoader}, and also implemented by backends that need it.
 *
 * <p>{@link #slabFreed} is called after all I/O on the slab has drained and before its memory is
 * released.
 */
public interface DramSlabListener {
    void slabAllocated(int slabId, MemorySegment slab);

    void slabFreed(int slabId, MemorySegment slab);
}
