package io.kvoffload.cuda;

import io.kvoffload.cuda.bindings.Cuda;
import io.kvoffload.cuda.bindings.CudaStream;
import io.kvoffload.cuda.bindings.DeviceMemory;
import java.lang.foreign.MemorySegment;

/** Chunks of the HBM hot cache: cudaMalloc'd device memory, filled on the tier's copy stream. */
final class DeviceChunks implements ChunkMemory<DeviceMemory> {
    private final CudaDeviceTier tier;
    private final CudaStream stream;

    DeviceChunks(CudaDeviceTier tier, CudaStream stream) {
        this.tier = tier;
        this.stream = stream;
    }

    @Override
    public DeviceMemory allocate(long bytes) {
        tier.makeCurrent();
        return DeviceMemory.allocate(bytes);
    }

    @Override
    public void free(DeviceMemory chunk) {
        tier.makeCurrent();
        chunk.close();
    }

    @Override
    public void upload(DeviceMemory chunk, long chunkOffset, MemorySegment src, long srcOffset, long bytes) {
        tier.makeCurrent();
        Cuda.copyToDeviceAsync(chunk, chunkOffset, src, srcOffset, bytes, stream);
    }

    @Override
    public void download(MemorySegment dst, long dstOffset, DeviceMemory chunk, long chunkOffset, long bytes) {
        tier.makeCurrent();
        Cuda.copyToHostAsync(dst, dstOffset, chunk, chunkOffset, bytes, stream);
    }

    @Override
    public void drain() {
        tier.makeCurrent();
        stream.synchronize();
    }
}
