package io.kvoffload.cuda.bindings;

import io.kvoffload.KvException;

/** A CUDA call returned an error: names the call, the error and what it was asked to do. */
public final class CudaCallException extends KvException {
    private static final long serialVersionUID = 1L;
    private final int code;

    public CudaCallException(String call, int code, String detail) {
        super(call + " failed: " + Cuda.errorName(code) + " (" + code + ")" + (detail.isEmpty() ? "" : "; " + detail));
        this.code = code;
    }

    /** The cudaError code. */
    public int code() {
        return code;
    }
}
