/**
 * The only code in kvoffload-cuda that hands addresses to CUDA (through JCuda). Every host range is
 * checked against its {@link java.lang.foreign.MemorySegment} and every device range against its
 * {@link io.kvoffload.cuda.bindings.DeviceMemory} allocation before a call is made ({@link
 * io.kvoffload.cuda.bindings.Bounds}), so no input can make the GPU read or write outside a buffer.
 * Return codes are checked on every call; a failure is a {@link
 * io.kvoffload.cuda.bindings.CudaCallException} naming the call, the code and the arguments.
 */
package io.kvoffload.cuda.bindings;
