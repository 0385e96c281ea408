package io.kvoffload.cuda.bindings;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import jcuda.Pointer;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;

/**
 * A busy-wait kernel standing in for attention: one thread spins on {@code clock64} for a number
 * of cycles, occupying its stream without touching memory, so a test can see whether copies on
 * another stream overlap it. Loaded from hand-written PTX through the driver API into the runtime's
 * primary context (current after {@link Cuda#setDevice}).
 */
public final class SpinKernel implements AutoCloseable {
    static final String PTX = """
            .version 7.0
            .target sm_50
            .address_size 64

            .visible .entry spin(
                .param .u64 cycles
            )
            {
                .reg .pred %p;
                .reg .u64 %start, %now, %target, %c;
                ld.param.u64 %c, [cycles];
                mov.u64 %start, %clock64;
                add.u64 %target, %start, %c;
            LOOP:
                mov.u64 %now, %clock64;
                setp.lt.u64 %p, %now, %target;
                @%p bra LOOP;
                ret;
            }
            """;

    private final CUmodule module = new CUmodule();
    private final CUfunction function = new CUfunction();

    private SpinKernel() {}

    /** Loads the kernel on the current device. */
    public static SpinKernel load() {
        SpinKernel k = new SpinKernel();
        driver(JCudaDriver.cuInit(0), "cuInit");
        byte[] src = PTX.getBytes(StandardCharsets.US_ASCII);
        byte[] z = Arrays.copyOf(src, src.length + 1); // the driver reads a NUL-terminated image
        driver(JCudaDriver.cuModuleLoadData(k.module, z), "cuModuleLoadData(spin PTX)");
        driver(JCudaDriver.cuModuleGetFunction(k.function, k.module, "spin"), "cuModuleGetFunction(spin)");
        return k;
    }

    /** Queues a spin of {@code cycles} GPU clock cycles on {@code stream}. */
    public void launch(long cycles, CudaStream stream) {
        Pointer params = Pointer.to(Pointer.to(new long[] {cycles}));
        driver(JCudaDriver.cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, new CUstream(stream.handle()), params, null),
                "cuLaunchKernel(spin)");
    }

    private static void driver(int rc, String call) {
        if (rc != 0) {
            throw new CudaCallException(call, rc, "driver API (CUresult)");
        }
    }

    @Override
    public void close() {
        JCudaDriver.cuModuleUnload(module);
    }
}
