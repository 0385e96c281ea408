package io.kvoffload.cuda;

import io.kvoffload.spi.Availability;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

/**
 * Gate for tests that need a GPU: skipped with the probe's reason where there is none, failed
 * instead when {@code -Dkvoffload.requireGpu=true} (gpu-test.sh sets it, so a GPU run cannot pass
 * by skipping).
 */
final class GpuTestSupport {
    private GpuTestSupport() {}

    static void requireGpu() {
        Availability a = CudaProbe.probe(0);
        if (!a.available()) {
            String msg = "no GPU, test skipped: " + a.reason();
            System.out.println(msg);
            if (Boolean.getBoolean("kvoffload.requireGpu")) {
                Assertions.fail("kvoffload.requireGpu=true but " + msg);
            }
            Assumptions.assumeTrue(false, msg);
        }
    }
}
