package io.kvoffload.cuda.bindings;

import jcuda.Pointer;

/**
 * A JCuda pointer to native host memory given by address. JCuda's {@code Pointer.to(ByteBuffer)}
 * cannot be used: a direct buffer view of a segment fails above 2 GiB, and Java arrays must never
 * be the source of an asynchronous copy.
 */
final class HostPtr extends Pointer {
    /** An empty pointer for CUDA to fill (cudaHostAlloc). */
    HostPtr() {}

    HostPtr(long address) {
        super(address);
    }

    long address() {
        return getNativePointer() + getByteOffset();
    }
}
