package io.kvoffload.cuda.bindings;

import jcuda.runtime.JCuda;
import jcuda.runtime.cudaError;
import jcuda.runtime.cudaEvent_t;
import jcuda.runtime.cudaStream_t;

/** A CUDA event: marks a point in a stream that another stream (or the host) can wait for. */
public final class CudaEvent implements AutoCloseable {
    private final cudaEvent_t handle;
    private volatile boolean closed;

    private CudaEvent(cudaEvent_t handle) {
        this.handle = handle;
    }

    /** An event without timing (cheaper to record and wait on). */
    public static CudaEvent create() {
        return create(false);
    }

    /** An event; {@code timing} lets {@link #elapsedMillis} measure between two of them. */
    public static CudaEvent create(boolean timing) {
        cudaEvent_t e = new cudaEvent_t();
        Cuda.check(JCuda.cudaEventCreateWithFlags(e, timing ? JCuda.cudaEventDefault : JCuda.cudaEventDisableTiming),
                "cudaEventCreateWithFlags", timing ? "cudaEventDefault" : "cudaEventDisableTiming");
        return new CudaEvent(e);
    }

    cudaEvent_t handle() {
        if (closed) {
            throw new IllegalStateException("event was destroyed");
        }
        return handle;
    }

    public void record(CudaStream stream) {
        record(stream.handle());
    }

    /** Records on the engine's own stream. */
    public void record(cudaStream_t stream) {
        Cuda.check(JCuda.cudaEventRecord(handle(), stream), "cudaEventRecord", "");
    }

    /** Blocks the host until the work before the last record is done. */
    public void synchronize() {
        Cuda.check(JCuda.cudaEventSynchronize(handle()), "cudaEventSynchronize", "");
    }

    /** Whether the work before the last record is done (never blocks). */
    public boolean isDone() {
        int rc = JCuda.cudaEventQuery(handle());
        if (rc == cudaError.cudaErrorNotReady) {
            return false;
        }
        Cuda.check(rc, "cudaEventQuery", "");
        return true;
    }

    /** Milliseconds between {@code start} and {@code end} (both timing events, both done). */
    public static float elapsedMillis(CudaEvent start, CudaEvent end) {
        float[] ms = new float[1];
        Cuda.check(JCuda.cudaEventElapsedTime(ms, start.handle(), end.handle()), "cudaEventElapsedTime", "");
        return ms[0];
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        Cuda.check(JCuda.cudaEventDestroy(handle), "cudaEventDestroy", "");
    }
}
