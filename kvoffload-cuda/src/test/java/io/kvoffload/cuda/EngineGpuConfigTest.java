package io.kvoffload.cuda;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.KvConfig;
import io.kvoffload.KvEngine;
import io.kvoffload.KvException;
import io.kvoffload.spi.Availability;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How the engine treats the GPU tier that this module provides, with or without a GPU. */
class EngineGpuConfigTest {
    @TempDir
    Path dir;

    private KvConfig.Builder config() {
        return KvConfig.builder().ssdDirectories(dir).deviceCapacityBytes(16L << 20).dramBudgetBytes(16L << 20);
    }

    @Test
    void autoUsesTheGpuWhereThereIsOneAndRunsWithoutOtherwise() throws Exception {
        Availability a = CudaProbe.probe(0);
        try (KvEngine e = KvEngine.open(config().gpu(KvConfig.Gpu.AUTO).build())) {
            assertTrue(e.deviceTier().isPresent() == a.available(), "tier present iff the probe says so: " + a.reason());
        }
    }

    @Test
    void onFailsWithTheProbesReasonWhereThereIsNoGpu() throws Exception {
        Availability a = CudaProbe.probe(0);
        if (a.available()) {
            try (KvEngine e = KvEngine.open(config().gpu(KvConfig.Gpu.ON).build())) {
                assertTrue(e.deviceTier().orElseThrow().unwrap(CudaDeviceTier.class).describe().contains("GPU 0"));
            }
            return;
        }
        var ex = assertThrows(KvException.class, () -> KvEngine.open(config().gpu(KvConfig.Gpu.ON).build()));
        assertTrue(ex.getMessage().contains("gpu = on") && ex.getMessage().contains(a.reason()), ex.getMessage());
    }

    @Test
    void offNeverOpensTheTier() throws Exception {
        try (KvEngine e = KvEngine.open(config().gpu(KvConfig.Gpu.OFF).build())) {
            assertFalse(e.deviceTier().isPresent());
        }
    }
}
