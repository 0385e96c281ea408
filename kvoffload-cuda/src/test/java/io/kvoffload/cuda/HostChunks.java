package io.kvoffload.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.IdentityHashMap;
import java.util.Map;

/** {@link ChunkMemory} over host memory, so the pool and cache logic run without a GPU. */
final class HostChunks implements ChunkMemory<MemorySegment> {
    final Map<MemorySegment, Arena> live = new IdentityHashMap<>();
    int allocations;
    int frees;

    @Override
    public MemorySegment allocate(long bytes) {
        Arena a = Arena.ofConfined();
        MemorySegment s = a.allocate(bytes, 64);
        live.put(s, a);
        allocations++;
        return s;
    }

    @Override
    public void free(MemorySegment chunk) {
        Arena a = live.remove(chunk);
        if (a == null) {
            throw new AssertionError("chunk freed twice");
        }
        a.close();
        frees++;
    }

    @Override
    public void upload(MemorySegment chunk, long chunkOffset, MemorySegment src, long srcOffset, long bytes) {
        MemorySegment.copy(src, srcOffset, chunk, chunkOffset, bytes);
    }

    @Override
    public void download(MemorySegment dst, long dstOffset, MemorySegment chunk, long chunkOffset, long bytes) {
        MemorySegment.copy(chunk, chunkOffset, dst, dstOffset, bytes);
    }

    @Override
    public void drain() {}
}
