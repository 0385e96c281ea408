package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The configuration keys of the reliability work: defaults, JSON, and messages for bad values. */
class ReliabilityConfigTest {
    @TempDir
    Path root;

    @Test
    void defaultsArePrivateTwoCopiesNoFaults() {
        KvConfig c = KvConfig.builder().ssdDirectories(root).build();
        assertEquals("600", c.fileMode());
        assertEquals(2, c.metadataCopies());
        assertNull(c.faultInjection());
        assertNull(c.metadataDirectory());
    }

    @Test
    void jsonSetsEveryKey() throws Exception {
        Path file = Files.writeString(root.resolve("kvo.json"), """
                {"ssdDirectories": ["a", "b"], "fileMode": "640", "metadataCopies": 1,
                 "faultInjection": {"seed": 9, "eio": 0.5, "tornRead": 0.1, "bitFlipRead": 0.2, "bitFlipDisk": 0.3,
                   "tornWrite": 0.4, "enospc": 0.05, "latencySpike": 0.01, "latencySpikeMillis": 7,
                   "vanishDevice": 1, "vanishAfterRequests": 100, "onlyDevice": 0, "limit": 3}}
                """);
        KvConfig c = KvConfig.load(file);
        assertEquals("640", c.fileMode());
        assertEquals(1, c.metadataCopies());
        assertEquals(new FaultInjection(9, 0.5, 0.1, 0.2, 0.3, 0.4, 0.05, 0.01, 7, 1, 100, 0, 3), c.faultInjection());
        assertEquals(FaultInjection.builder(0).build(), ConfigFile.fromMap(java.util.Map.of("ssdDirectories",
                java.util.List.of("a"), "faultInjection", java.util.Map.of()), root).faultInjection());
    }

    @Test
    void badValuesNameTheKey() {
        IllegalArgumentException a = assertThrows(IllegalArgumentException.class,
                () -> KvConfig.builder().ssdDirectories(root).metadataCopies(0).build());
        assertTrue(a.getMessage().contains("metadataCopies = 0") && a.getMessage().contains("1..16"), a.getMessage());
        IllegalArgumentException b = assertThrows(IllegalArgumentException.class,
                () -> KvConfig.builder().ssdDirectories(root).fileMode("200").build());
        assertTrue(b.getMessage().contains("fileMode = '200'"), b.getMessage());
        IllegalArgumentException c = assertThrows(IllegalArgumentException.class,
                () -> ConfigFile.fromMap(java.util.Map.of("ssdDirectories", java.util.List.of("a"), "faultInjection",
                        java.util.Map.of("eoi", 0.1)), root));
        assertTrue(c.getMessage().contains("faultInjection.eoi") && c.getMessage().contains("eio"), c.getMessage());
        IllegalArgumentException d = assertThrows(IllegalArgumentException.class,
                () -> FaultInjection.builder(1).eio(1.5).build());
        assertTrue(d.getMessage().contains("eio = 1.5") && d.getMessage().contains("0.0..1.0"), d.getMessage());
    }
}
