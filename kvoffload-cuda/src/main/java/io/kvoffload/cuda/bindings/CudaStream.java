package io.kvoffload.cuda.bindings;

import jcuda.runtime.JCuda;
import jcuda.runtime.cudaStream_t;

/** A CUDA stream. Non-blocking streams do not synchronise with the legacy default stream. */
public final class CudaStream implements AutoCloseable {
    private final cudaStream_t handle;
    private volatile boolean closed;

    private CudaStream(cudaStream_t handle) {
        this.handle = handle;
    }

    /** Creates a stream on the current device, with cudaStreamNonBlocking so the engine's default-stream work does not serialise with copies. */
    public static CudaStream createNonBlocking() {
        cudaStream_t s = new cudaStream_t();
        Cuda.check(JCuda.cudaStreamCreateWithFlags(s, JCuda.cudaStreamNonBlocking), "cudaStreamCreateWithFlags",
                "cudaStreamNonBlocking");
        return new CudaStream(s);
    }

    /** The JCuda handle, for the engine's own launches. */
    public cudaStream_t handle() {
        if (closed) {
            throw new IllegalStateException("stream was destroyed");
        }
        return handle;
    }

    public boolean isClosed() {
        return closed;
    }

    /** Makes later work on this stream wait for {@code event} (on the GPU, not the host). */
    public void waitFor(CudaEvent event) {
        waitFor(handle(), event);
    }

    /** Makes later work on {@code stream} (the engine's own) wait for {@code event}. */
    public static void waitFor(cudaStream_t stream, CudaEvent event) {
        if (stream == null || event == null) {
            throw new IllegalArgumentException("stream and event must not be null");
        }
        Cuda.check(JCuda.cudaStreamWaitEvent(stream, event.handle(), 0), "cudaStreamWaitEvent", "");
    }

    /** Blocks the calling thread until the stream's work is done. */
    public void synchronize() {
        Cuda.check(JCuda.cudaStreamSynchronize(handle()), "cudaStreamSynchronize", "");
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        Cuda.check(JCuda.cudaStreamDestroy(handle), "cudaStreamDestroy", "");
    }

    @Override
    public String toString() {
        return "CudaStream[" + handle + "]";
    }
}
