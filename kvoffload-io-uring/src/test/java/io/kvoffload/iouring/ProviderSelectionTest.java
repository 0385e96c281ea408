package io.kvoffload.iouring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.spi.Availability;
import io.kvoffload.spi.IoBackend;
import io.kvoffload.spi.IoBackendProvider;
import io.kvoffload.spi.IoDevice;
import io.kvoffload.spi.IoOptions;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** ServiceLoader finds the io_uring provider next to the portable one, and it wins where available. */
class ProviderSelectionTest {
    @TempDir
    Path dir;

    private static Map<String, IoBackendProvider> providers() {
        return ServiceLoader.load(IoBackendProvider.class).stream().map(ServiceLoader.Provider::get)
                .collect(Collectors.toMap(IoBackendProvider::name, Function.identity()));
    }

    @Test
    void bothProvidersAreFoundWithTheirPriorities() {
        Map<String, IoBackendProvider> all = providers();
        assertNotNull(all.get("io_uring"), "io_uring provider registered in META-INF/services: " + all.keySet());
        assertNotNull(all.get("portable"), "portable provider from core: " + all.keySet());
        assertEquals(100, all.get("io_uring").priority());
        assertEquals(0, all.get("portable").priority());
        Availability a = all.get("io_uring").probe();
        assertNotNull(a.reason());
        assertEquals(a, all.get("io_uring").probe(), "probe is stable");
    }

    @Test
    void highestAvailablePriorityIsIoUring() throws Exception {
        IoUringTestSupport.requireIoUring();
        IoBackendProvider chosen = providers().values().stream().filter(p -> p.probe().available())
                .max(Comparator.comparingInt(IoBackendProvider::priority)).orElseThrow();
        assertEquals("io_uring", chosen.name());
        List<IoDevice> devices = IoUringTestSupport.devices(dir, 2, 1L << 20, 1);
        try (IoBackend backend = chosen.open(devices, new IoOptions(true, 8, 1))) {
            assertEquals("io_uring", backend.name());
            assertTrue(backend.directIo(1));
            assertNotNull(backend.dramSlabListener());
        }
    }
}
