package io.kvoffload.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.cuda.bindings.Cuda.ProbeFacts;
import io.kvoffload.spi.Availability;
import org.junit.jupiter.api.Test;

/** The probe's reasons, from made-up facts (pure Java), and the real probe on this machine. */
class CudaProbeTest {
    @Test
    void missingNativesNameTheJars() {
        String r = CudaProbe.reason(new ProbeFacts("UnsatisfiedLinkError: no JCudaRuntime", -1, 0, 0, 0, 0, null, 0, 0, 0));
        assertTrue(r.contains("JCuda could not be loaded"), r);
        assertTrue(r.contains("jcuda-natives"), r);
    }

    @Test
    void noDriverSaysSo() {
        String r = CudaProbe.reason(new ProbeFacts(null, 35, 0, 0, 12000, 0, null, 0, 0, 0));
        assertTrue(r.contains("cudaErrorInsufficientDriver (35)"), r);
        assertTrue(r.contains("libcuda.so.1 was not found"), r);
    }

    @Test
    void oldDriverNamesBothVersions() {
        String r = CudaProbe.reason(new ProbeFacts(null, 35, 0, 11040, 12060, 0, null, 0, 0, 0));
        assertTrue(r.contains("CUDA 11.4") && r.contains("12.6"), r);
    }

    @Test
    void noDeviceAndBadIndex() {
        String r = CudaProbe.reason(new ProbeFacts(null, 100, 0, 12060, 12060, 0, null, 0, 0, 0));
        assertTrue(r.contains("sees no GPU") && r.contains("CUDA_VISIBLE_DEVICES"), r);
        r = CudaProbe.reason(new ProbeFacts(null, 0, 2, 12060, 12060, 3, null, 0, 0, 0));
        assertEquals("gpuDevice = 3 but the driver sees 2 GPU(s); allowed: 0..1", r);
        r = CudaProbe.reason(new ProbeFacts(null, 0, 0, 12060, 12060, 0, null, 0, 0, 0));
        assertTrue(r.contains("0 GPUs"), r);
        r = CudaProbe.reason(new ProbeFacts(null, 999, 0, 12060, 12060, 0, null, 0, 0, 0));
        assertTrue(r.contains("(999)"), r);
    }

    @Test
    void aWorkingGpuIsDescribed() {
        ProbeFacts f = new ProbeFacts(null, 0, 1, 12060, 12060, 0, "NVIDIA H100", 80L << 30, 9, 0);
        assertNull(CudaProbe.reason(f));
        Availability a = CudaProbe.toAvailability(f);
        assertTrue(a.available());
        assertEquals("GPU 0 of 1: NVIDIA H100, compute 9.0, 80.0 GiB; driver CUDA 12.6, runtime 12.6", a.reason());
    }

    @Test
    void theRealProbeNeverThrowsAndGivesAReason() {
        Availability a = CudaProbe.probe(0);
        System.out.println("CUDA probe on this machine: " + (a.available() ? "available: " : "unavailable: ") + a.reason());
        assertFalse(a.reason().isBlank());
        assertEquals(a, new CudaDeviceTierProvider().probe(), "cached and the provider's agree");
    }
}
