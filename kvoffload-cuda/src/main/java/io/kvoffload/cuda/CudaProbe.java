package io.kvoffload.cuda;

import io.kvoffload.cuda.bindings.Cuda;
import io.kvoffload.spi.Availability;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * Whether the GPU tier can run here, and if not, why: JCuda's natives missing, no NVIDIA driver
 * (or one too old), no device, or the configured device index beyond the devices present. Runs
 * once per device index per JVM; never throws.
 */
public final class CudaProbe {
    private static final ConcurrentMap<Integer, Availability> CACHE = new ConcurrentHashMap<>();

    /** cudaErrorInsufficientDriver: no libcuda.so.1, or one older than the runtime. */
    static final int INSUFFICIENT_DRIVER = 35;
    /** cudaErrorNoDevice. */
    static final int NO_DEVICE = 100;

    private CudaProbe() {}

    /** Probes device {@code device} (cached). */
    public static Availability probe(int device) {
        if (device < 0) {
            throw new IllegalArgumentException("device = " + device + "; allowed: 0 or more");
        }
        return CACHE.computeIfAbsent(device, d -> toAvailability(Cuda.probe(d)));
    }

    static Availability toAvailability(Cuda.ProbeFacts f) {
        String why = reason(f);
        return why == null ? Availability.yes(describe(f)) : Availability.no(why);
    }

    /**
     * Why the facts rule the GPU tier out, or null when they do not. Pure: tested without a GPU.
     */
    static String reason(Cuda.ProbeFacts f) {
        if (f.loadFailure() != null) {
            return "JCuda could not be loaded (" + f.loadFailure() + "); put org.jcuda:jcuda and its"
                    + " jcuda-natives jar for this platform on the class path";
        }
        if (f.countCode() == INSUFFICIENT_DRIVER) {
            return "no usable NVIDIA driver: cudaGetDeviceCount returned cudaErrorInsufficientDriver (35); "
                    + (f.driverVersion() == 0
                            ? "libcuda.so.1 was not found (install the NVIDIA driver, or run where a GPU is present)"
                            : "the driver supports CUDA " + version(f.driverVersion()) + " but JCuda's runtime needs "
                                    + version(f.runtimeVersion()) + " (update the driver)");
        }
        if (f.countCode() == NO_DEVICE) {
            return "the NVIDIA driver is installed but sees no GPU: cudaErrorNoDevice (100); check"
                    + " CUDA_VISIBLE_DEVICES and that the device nodes /dev/nvidia* are visible (containers)";
        }
        if (f.countCode() != 0) {
            return "the CUDA runtime failed: " + Cuda.errorName(f.countCode()) + " (" + f.countCode() + ")";
        }
        if (f.deviceCount() == 0) {
            return "the NVIDIA driver reports 0 GPUs";
        }
        if (f.device() >= f.deviceCount()) {
            return "gpuDevice = " + f.device() + " but the driver sees " + f.deviceCount() + " GPU(s); allowed: 0.."
                    + (f.deviceCount() - 1);
        }
        return null;
    }

    static String describe(Cuda.ProbeFacts f) {
        return String.format(Locale.ROOT, "GPU %d of %d: %s, compute %d.%d, %.1f GiB; driver CUDA %s, runtime %s",
                f.device(), f.deviceCount(), f.deviceName(), f.computeMajor(), f.computeMinor(),
                f.deviceMemory() / (double) (1L << 30), version(f.driverVersion()), version(f.runtimeVersion()));
    }

    /** CUDA encodes 12.6 as 12060. */
    static String version(int v) {
        return v <= 0 ? "none" : (v / 1000) + "." + (v % 1000) / 10;
    }
}
