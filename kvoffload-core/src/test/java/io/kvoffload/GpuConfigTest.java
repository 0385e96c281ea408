package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The GPU keys of the configuration, and an engine without any device tier provider. */
class GpuConfigTest {
    @TempDir
    Path dir;

    @Test
    void defaultsAndParsing() {
        KvConfig c = KvConfig.builder().ssdDirectories(dir).build();
        assertEquals(KvConfig.Gpu.AUTO, c.gpu());
        assertEquals(0, c.gpuDevice());
        assertEquals(256L << 20, c.gpuCacheBudgetBytes());
        KvConfig f = ConfigFile.fromMap(Map.of("ssdDirectories", java.util.List.of("."), "gpu", "ON", "gpuDevice", 1,
                "gpuCacheBudget", "2GiB"), dir);
        assertEquals(KvConfig.Gpu.ON, f.gpu());
        assertEquals(1, f.gpuDevice());
        assertEquals(2L << 30, f.gpuCacheBudgetBytes());
    }

    @Test
    void badValuesNameKeyValueAndRange() {
        var e = assertThrows(IllegalArgumentException.class, () -> KvConfig.Gpu.parse("maybe"));
        assertEquals("gpu = 'maybe'; allowed: auto, on, off", e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> KvConfig.builder().ssdDirectories(dir).gpuDevice(-1).build());
        assertTrue(e.getMessage().startsWith("gpuDevice = -1 is out of range; allowed: 0..1023"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> KvConfig.builder().ssdDirectories(dir).gpuCacheBudgetBytes(-5).build());
        assertTrue(e.getMessage().startsWith("gpuCacheBudgetBytes = -5"), e.getMessage());
        // An integer key of a configuration file: not a number, a fraction, or beyond 32 bits.
        for (Object bad : new Object[] {"two", 1.5, 3_000_000_000L, "3000000000"}) {
            e = assertThrows(IllegalArgumentException.class,
                    () -> ConfigFile.fromMap(Map.of("ssdDirectories", java.util.List.of("."), "gpuDevice", bad), dir));
            assertTrue(e.getMessage().startsWith("gpuDevice = '" + bad + "' is "), e.getMessage());
            assertTrue(e.getMessage().contains(bad instanceof Long || "3000000000".equals(bad)
                    ? "out of range; allowed: -2147483648..2147483647" : "not an integer"), e.getMessage());
        }
    }

    @Test
    void withoutAProviderAutoRunsWithoutATierAndOnFailsWithTheReason() throws Exception {
        // kvoffload-core's own tests have no device tier provider on the class path.
        try (KvEngine e = KvEngine.open(KvConfig.builder().ssdDirectories(dir).deviceCapacityBytes(8L << 20).build())) {
            assertFalse(e.deviceTier().isPresent());
        }
        var ex = assertThrows(KvException.class, () -> KvEngine.open(KvConfig.builder().ssdDirectories(dir)
                .deviceCapacityBytes(8L << 20).gpu(KvConfig.Gpu.ON).build()));
        assertTrue(ex.getMessage().contains("gpu = on") && ex.getMessage().contains("add kvoffload-cuda"), ex.getMessage());
    }
}
