package io.kvoffload.cuda;

import io.kvoffload.cuda.bindings.Cuda;
import java.lang.foreign.MemorySegment;

/**
 * How host memory is made page-locked for DMA. The DRAM tier's slabs are registered in place
 * ({@link #HOST_REGISTER}, cudaHostRegister): the pool keeps owning its memory and its io_uring
 * registration. The alternative, memory allocated pinned by CUDA (cudaHostAlloc,
 * {@link io.kvoffload.cuda.bindings.PinnedHostBuffer}), is what the GPU benchmark compares against,
 * so the choice can be measured on a GPU.
 */
public interface HostPinning {
    String name();

    void pin(MemorySegment segment);

    /** Called after every copy touching the segment has drained. */
    void unpin(MemorySegment segment);

    /** cudaHostRegister / cudaHostUnregister with the portable flag (valid in every context). */
    HostPinning HOST_REGISTER = new HostPinning() {
        @Override
        public String name() {
            return "cudaHostRegister";
        }

        @Override
        public void pin(MemorySegment segment) {
            Cuda.hostRegister(segment, Cuda.HOST_REGISTER_PORTABLE);
        }

        @Override
        public void unpin(MemorySegment segment) {
            Cuda.hostUnregister(segment);
        }
    };
}
