package io.kvoffload.cuda;

import java.lang.foreign.MemorySegment;

/**
 * Where a {@link BlockMajorPool} gets its chunks and how bytes move in and out of its blocks. The
 * CUDA tier backs it with device allocations; tests back it with host memory, so the allocator and
 * resizing logic run without a GPU.
 *
 * @param <C> one chunk (a device allocation, or a host segment in tests)
 */
public interface ChunkMemory<C> {
    /** Allocates a chunk of {@code bytes}. */
    C allocate(long bytes);

    /** Frees a chunk (no block of it is in use any more). */
    void free(C chunk);

    /** Copies host bytes into a chunk (asynchronously on the GPU; ordered before later copies). */
    void upload(C chunk, long chunkOffset, MemorySegment src, long srcOffset, long bytes);

    /** Copies chunk bytes to the host; the bytes are there when {@link #drain()} returns. */
    void download(MemorySegment dst, long dstOffset, C chunk, long chunkOffset, long bytes);

    /** Waits until every copy issued so far is done (before a chunk is freed, or host bytes read). */
    void drain();
}
