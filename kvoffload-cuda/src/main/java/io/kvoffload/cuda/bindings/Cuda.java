package io.kvoffload.cuda.bindings;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import jcuda.Pointer;
import jcuda.runtime.JCuda;
import jcuda.runtime.cudaDeviceAttr;
import jcuda.runtime.cudaDeviceProp;
import jcuda.runtime.cudaError;
import jcuda.runtime.cudaMemcpyKind;

/**
 * Checked wrappers over the CUDA runtime calls kvoffload uses (JCuda 12.6.0). JCuda's own
 * exceptions stay off (its default): every return code is checked here so the message can name the
 * arguments. Calls act on the calling thread's current device; callers select it with
 * {@link #setDevice(int)}.
 */
public final class Cuda {
    private Cuda() {}

    /** cudaHostRegisterPortable: the pinning holds for every CUDA context, not only the current one. */
    public static final int HOST_REGISTER_PORTABLE = 1;
    /** cudaHostAllocPortable, with the same meaning for cudaHostAlloc. */
    public static final int HOST_ALLOC_PORTABLE = 1;

    /** The name of a cudaError code, e.g. {@code cudaErrorInsufficientDriver}; pure Java. */
    public static String errorName(int code) {
        String s = cudaError.stringFor(code);
        return s == null || s.startsWith("INVALID") ? "cudaError " + code : s;
    }

    static void check(int rc, String call, String detail) {
        if (rc != cudaError.cudaSuccess) {
            throw new CudaCallException(call, rc, detail);
        }
    }

    // ------------------------------------------------------------------ probe

    /**
     * What the probe saw. {@code loadFailure} is set when the JCuda classes or natives could not be
     * loaded; otherwise the codes and counts are what the runtime returned.
     */
    public record ProbeFacts(String loadFailure, int countCode, int deviceCount, int driverVersion,
            int runtimeVersion, int device, String deviceName, long deviceMemory, int computeMajor,
            int computeMinor) {}

    /**
     * Asks the runtime for the driver and the devices; never throws. Loading JCuda's runtime library
     * needs only the JCuda jars; the NVIDIA driver (libcuda.so.1) is needed by the runtime calls,
     * which report {@code cudaErrorInsufficientDriver} without one.
     */
    public static ProbeFacts probe(int device) {
        try {
            int[] v = new int[1];
            int drv = JCuda.cudaDriverGetVersion(v) == cudaError.cudaSuccess ? v[0] : 0;
            int rt = JCuda.cudaRuntimeGetVersion(v) == cudaError.cudaSuccess ? v[0] : 0;
            int[] n = new int[1];
            int rc = JCuda.cudaGetDeviceCount(n);
            if (rc != cudaError.cudaSuccess || n[0] <= device) {
                return new ProbeFacts(null, rc, rc == cudaError.cudaSuccess ? n[0] : 0, drv, rt, device, null, 0, 0,
                        0);
            }
            cudaDeviceProp prop = new cudaDeviceProp();
            int prc = JCuda.cudaGetDeviceProperties(prop, device);
            if (prc != cudaError.cudaSuccess) {
                return new ProbeFacts(null, prc, n[0], drv, rt, device, null, 0, 0, 0);
            }
            return new ProbeFacts(null, rc, n[0], drv, rt, device, prop.getName(), prop.totalGlobalMem, prop.major,
                    prop.minor);
        } catch (LinkageError | SecurityException e) {
            // UnsatisfiedLinkError (natives missing or unloadable), NoClassDefFoundError (jar missing),
            // ExceptionInInitializerError (JCuda's static initialiser failed).
            String msg = e.getMessage() == null ? "" : e.getMessage().lines().findFirst().orElse("");
            return new ProbeFacts(e.getClass().getSimpleName() + ": " + msg, -1, 0, 0, 0, device, null, 0, 0, 0);
        }
    }

    // ------------------------------------------------------------------ device

    public static void setDevice(int device) {
        check(JCuda.cudaSetDevice(device), "cudaSetDevice", "device " + device);
    }

    /** Free and total device memory in bytes, as {@code {free, total}}. */
    public static long[] memInfo() {
        long[] free = new long[1];
        long[] total = new long[1];
        check(JCuda.cudaMemGetInfo(free, total), "cudaMemGetInfo", "");
        return new long[] {free[0], total[0]};
    }

    public static void deviceSynchronize() {
        check(JCuda.cudaDeviceSynchronize(), "cudaDeviceSynchronize", "");
    }

    // ------------------------------------------------------------------ host memory

    /**
     * Page-locks {@code segment} (cudaHostRegister) so copies from and to it are DMA transfers that
     * can run asynchronously.
     */
    public static void hostRegister(MemorySegment segment, int flags) {
        Bounds.checkHost("segment", segment, 0, segment == null ? 0 : segment.byteSize());
        check(JCuda.cudaHostRegister(new HostPtr(segment.address()), segment.byteSize(), flags), "cudaHostRegister",
                "segment of " + segment.byteSize() + " bytes at 0x" + Long.toHexString(segment.address()));
    }

    /** Undoes {@link #hostRegister}. The caller has drained every copy that touches the segment. */
    public static void hostUnregister(MemorySegment segment) {
        Bounds.checkHost("segment", segment, 0, segment == null ? 0 : segment.byteSize());
        check(JCuda.cudaHostUnregister(new HostPtr(segment.address())), "cudaHostUnregister",
                "segment at 0x" + Long.toHexString(segment.address()));
    }

    // ------------------------------------------------------------------ copies

    /** Copies {@code bytes} from host {@code src[srcOffset..]} to device {@code dst[dstOffset..]} on {@code stream}. */
    public static void copyToDeviceAsync(DeviceMemory dst, long dstOffset, MemorySegment src, long srcOffset, long bytes,
            CudaStream stream) {
        Bounds.checkDevice("dst", dst, dstOffset, bytes);
        Bounds.checkHost("src", src, srcOffset, bytes);
        memcpyAsync(dst.ptr().at(dstOffset), new HostPtr(src.address() + srcOffset), bytes,
                cudaMemcpyKind.cudaMemcpyHostToDevice, "cudaMemcpyAsync(HostToDevice)", stream,
                " to " + dst + "+" + dstOffset);
    }

    /**
     * Copies {@code rows.length} host rows of {@code rowBytes} each (the first {@code rowBytes} of
     * every segment) to device {@code dst}, row {@code i} at {@code dstOffset + i × dstPitch}, on
     * {@code stream}, with as few calls as the rows allow: one cudaMemcpy2DAsync when the rows are
     * equally spaced in host memory ({@link Bounds#uniformStride}) and both pitches are within the
     * device's cudaDevAttrMaxPitch, else one cudaMemcpyAsync per row. Every row and the whole
     * destination span are bounds-checked first.
     *
     * @return the number of CUDA copy calls made (0 when {@code rowBytes} is 0)
     */
    public static int copyRowsToDeviceAsync(DeviceMemory dst, long dstOffset, long dstPitch, MemorySegment[] rows,
            long rowBytes, CudaStream stream) {
        if (rows == null || rows.length == 0) {
            throw new IllegalArgumentException("rows is " + (rows == null ? "null" : "empty") + "; allowed: 1 or more"
                    + " native segments");
        }
        for (int i = 0; i < rows.length; i++) {
            Bounds.checkHost("rows[" + i + "]", rows[i], 0, rowBytes);
        }
        Bounds.checkDeviceRows("dst", dst, dstOffset, dstPitch, rowBytes, rows.length);
        requireStream(stream);
        if (rowBytes == 0) {
            return 0;
        }
        long srcPitch = Bounds.uniformStride(rows, rowBytes);
        if (rows.length > 1 && srcPitch > 0 && Math.max(srcPitch, dstPitch) <= maxPitch()) {
            check(JCuda.cudaMemcpy2DAsync(dst.ptr().at(dstOffset), dstPitch, new HostPtr(rows[0].address()), srcPitch,
                    rowBytes, rows.length, cudaMemcpyKind.cudaMemcpyHostToDevice, stream.handle()),
                    "cudaMemcpy2DAsync(HostToDevice)", rows.length + " rows of " + rowBytes + " bytes, source pitch "
                            + srcPitch + ", to " + dst + "+" + dstOffset + " at pitch " + dstPitch);
            return 1;
        }
        for (int i = 0; i < rows.length; i++) {
            long at = dstOffset + i * dstPitch;
            check(JCuda.cudaMemcpyAsync(dst.ptr().at(at), new HostPtr(rows[i].address()), rowBytes,
                    cudaMemcpyKind.cudaMemcpyHostToDevice, stream.handle()), "cudaMemcpyAsync(HostToDevice)",
                    "row " + i + ": " + rowBytes + " bytes to " + dst + "+" + at);
        }
        return rows.length;
    }

    private static final ConcurrentMap<Integer, Long> MAX_PITCH = new ConcurrentHashMap<>();

    /** cudaDevAttrMaxPitch of the current device: the largest pitch cudaMemcpy2D accepts (cached). */
    static long maxPitch() {
        int[] v = new int[1];
        check(JCuda.cudaGetDevice(v), "cudaGetDevice", "");
        return MAX_PITCH.computeIfAbsent(v[0], d -> {
            int[] p = new int[1];
            check(JCuda.cudaDeviceGetAttribute(p, cudaDeviceAttr.cudaDevAttrMaxPitch, d), "cudaDeviceGetAttribute",
                    "cudaDevAttrMaxPitch, device " + d);
            // The attribute is an int: a negative value would be a signed overflow of a huge limit.
            return p[0] < 0 ? Integer.MAX_VALUE : (long) p[0];
        });
    }

    /** Copies {@code bytes} from device {@code src[srcOffset..]} to host {@code dst[dstOffset..]} on {@code stream}. */
    public static void copyToHostAsync(MemorySegment dst, long dstOffset, DeviceMemory src, long srcOffset, long bytes,
            CudaStream stream) {
        Bounds.checkHost("dst", dst, dstOffset, bytes);
        Bounds.checkDevice("src", src, srcOffset, bytes);
        memcpyAsync(new HostPtr(dst.address() + dstOffset), src.ptr().at(srcOffset), bytes,
                cudaMemcpyKind.cudaMemcpyDeviceToHost, "cudaMemcpyAsync(DeviceToHost)", stream,
                " from " + src + "+" + srcOffset);
    }

    /** Copies between two device allocations on {@code stream}. */
    public static void copyDeviceAsync(DeviceMemory dst, long dstOffset, DeviceMemory src, long srcOffset, long bytes,
            CudaStream stream) {
        Bounds.checkDevice("dst", dst, dstOffset, bytes);
        Bounds.checkDevice("src", src, srcOffset, bytes);
        memcpyAsync(dst.ptr().at(dstOffset), src.ptr().at(srcOffset), bytes, cudaMemcpyKind.cudaMemcpyDeviceToDevice,
                "cudaMemcpyAsync(DeviceToDevice)", stream, "");
    }

    /**
     * The one cudaMemcpyAsync of the three copy directions, after the caller's bounds checks: checks
     * {@code stream}, copies nothing for 0 bytes, and names {@code call} and {@code where} in a failure.
     */
    private static void memcpyAsync(Pointer dst, Pointer src, long bytes, int kind, String call, CudaStream stream,
            String where) {
        requireStream(stream);
        if (bytes == 0) {
            return;
        }
        check(JCuda.cudaMemcpyAsync(dst, src, bytes, kind, stream.handle()), call, bytes + " bytes" + where);
    }

    /** Fills device bytes with {@code value} on {@code stream}. */
    public static void memsetAsync(DeviceMemory dst, long offset, int value, long bytes, CudaStream stream) {
        Bounds.checkDevice("dst", dst, offset, bytes);
        requireStream(stream);
        check(JCuda.cudaMemsetAsync(dst.ptr().at(offset), value, bytes, stream.handle()), "cudaMemsetAsync",
                bytes + " bytes");
    }

    private static void requireStream(CudaStream stream) {
        if (stream == null) {
            throw new IllegalArgumentException("stream is null; copies run on an explicit stream");
        }
        if (stream.isClosed()) {
            throw new IllegalStateException("stream " + stream + " was destroyed");
        }
    }
}
