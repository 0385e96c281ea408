package io.kvoffload.internal.dram;

import io.kvoffload.internal.ffi.AnonymousMemory;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Where DRAM slabs and elastic chunks get their memory: a fresh anonymous mapping, 2 MiB-aligned
 * and backed by transparent huge pages where the kernel gives them ({@link AnonymousMemory}), or
 * {@code arena.allocate} where native access is unavailable or {@code hugePages} is off.
 *
 * <p>Huge pages matter to the reads, not to the CPU: an O_DIRECT read into a registered io_uring
 * buffer built from huge pages reaches the device as one segment per 2 MiB rather than one per
 * 4 KiB page (see docs/io-uring.md, "Slab memory").
 */
public final class SlabMemory {
    private SlabMemory() {}

    /**
     * {@code bytes} (a positive multiple of {@link DramPool#ALIGNMENT}) of zeroed, page-aligned
     * memory that lives until {@code arena} closes.
     */
    public static MemorySegment allocate(Arena arena, long bytes, boolean hugePages) {
        MemorySegment mapped = hugePages ? AnonymousMemory.map(arena, bytes) : null;
        return mapped != null ? mapped : arena.allocate(bytes, DramPool.ALIGNMENT);
    }
}
