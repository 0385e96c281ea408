package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.io.DeviceModel;
import io.kvoffload.testing.TestEngines;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The {@code deviceModel} configuration key: parsing, validation messages, and the engine applying it. */
class DeviceModelConfigTest {
    @TempDir
    Path dir;

    @Test
    void fileKeyParsesProfilesAndCustomNumbers() throws Exception {
        Files.createDirectories(dir.resolve("a"));
        Files.createDirectories(dir.resolve("b"));
        Path file = dir.resolve("kv.json");
        Files.writeString(file, """
                {"ssdDirectories": ["a", "b"],
                 "deviceModel": {"profile": "custom", "bandwidth": "500MB", "iops": 50000, "latencyMicros": 100,
                                 "queueDepth": 32, "scaleDevices": 8, "hostBandwidth": "1GB", "hostIops": 100000}}
                """);
        DeviceModelSpec s = KvConfig.load(file).deviceModel();
        assertEquals(DeviceModelSpec.CUSTOM, s.profile());
        assertEquals(500_000_000L, s.bandwidthBytesPerSecond());
        assertEquals(50_000L, s.iops());
        assertEquals(100_000L, s.latencyNanos());
        assertEquals(32, s.queueDepth());
        assertEquals(0.25, s.effectiveScale(2), 1e-12); // min(1 GB / (8 × 500 MB), 100k / (8 × 50k))
        assertNull(ConfigFile.parseDeviceModel("none"));
        assertNull(ConfigFile.parseDeviceModel(null));
        assertEquals(DeviceModelSpec.LOW_END, ConfigFile.parseDeviceModel("Low-End").profile());
        assertEquals(0.5, ConfigFile.parseDeviceModel(Map.of("profile", "high-end", "scale", 0.5)).scale());
        assertNull(KvConfig.builder().ssdDirectories(dir).build().deviceModel(), "no model by default");
    }

    @Test
    void badValuesNameKeyValueAndRange() {
        assertMessage(() -> ConfigFile.parseDeviceModel(Map.of("profile", "custom", "bandwidth", "1GB", "iops", 1000,
                "latencyMicros", 2_000_000)), "deviceModel.latencyMicros = 2000000", "0..1000000");
        assertMessage(() -> ConfigFile.parseDeviceModel(Map.of("profile", "custom", "bandwidth", "10KB", "iops", 1000,
                "latencyMicros", 0)), "deviceModel.bandwidth = 10000", "1000000..");
        assertMessage(() -> ConfigFile.parseDeviceModel(Map.of("profile", "high-end", "iops", 1000)), "deviceModel.iops",
                "only allowed with profile 'custom'");
        assertMessage(() -> ConfigFile.parseDeviceModel(Map.of("profile", "high-end", "speed", 1)), "deviceModel.speed",
                "allowed keys");
        assertMessage(() -> ConfigFile.parseDeviceModel(Map.of("profile", "custom", "iops", 1000)),
                "deviceModel.bandwidth is missing", "latencyMicros");
        assertMessage(() -> ConfigFile.parseDeviceModel(Map.of("iops", 1000)), "deviceModel.profile is missing",
                "high-end");
        assertMessage(() -> ConfigFile.parseDeviceModel(Map.of("profile", "high-end", "scale", "fast")),
                "deviceModel.scale = 'fast'", "not a number");
        assertMessage(() -> ConfigFile.parseDeviceModel(Map.of("profile", "high-end", "scale", 3)),
                "deviceModel.scale = 3.0", "(0, 1]");
        assertMessage(() -> ConfigFile.parseDeviceModel(42), "deviceModel = '42'", "high-end");
        assertMessage(() -> ConfigFile.parseDeviceModel("mid-range"), "deviceModel.profile = 'mid-range'", "low-end");
        List<Path> dirs = TestEngines.deviceDirs(dir, 4);
        assertMessage(() -> KvConfig.builder().ssdDirectories(dirs)
                .deviceModel(DeviceModelSpec.highEnd().withScaleDevices(2)).build(), "deviceModel.scaleDevices = 2",
                "4..256");
    }

    private static void assertMessage(Runnable r, String... parts) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, r::run);
        for (String p : parts) {
            assertTrue(e.getMessage().contains(p), "message '" + e.getMessage() + "' lacks '" + p + "'");
        }
    }

    @Test
    void engineRunsOnTheModelAndSaysSo() throws Exception {
        KvShape shape = new KvShape(2, 8, 2, 16, DType.BF16);
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(dir, 2), "portable").blockTokens(4)
                .deviceModel("high-end").build();
        try (KvEngine e = KvEngine.open(cfg); KvSequence seq = e.createSequence(shape)) {
            assertEquals("portable+simulated:high-end", e.ioBackend());
            assertTrue(DeviceModel.isSimulated(e.stats().ioBackend()));
            TestEngines.append(seq, 5, 40, 16);
            seq.commit();
            assertNull(TestEngines.verify(seq, 5, TestEngines.all(40)));
        }
    }
}
