package io.kvoffload.internal.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kvoffload.FaultInjection;
import io.kvoffload.KvConfig;
import io.kvoffload.KvIoException;
import io.kvoffload.testing.TestEngines;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The layout writers' shared write: all or nothing over several devices, DRAM always given back. */
class ExtentBatchWriterTest {
    @TempDir
    Path root;

    private static long free(Store store) {
        return store.devices().stream().mapToLong(d -> d.allocator().freeBytes()).sum();
    }

    /** Writes {@code extents} 4 KiB extents round-robin over the devices, in batches of 2. */
    private static void writeExtents(ExtentBatchWriter w, Store store, int extents) {
        for (int i = 0; i < extents; i++) {
            long packed = w.allocate(i % store.devices().size(), 4096);
            MemorySegment dst = w.stage(4096);
            dst.fill((byte) i);
            w.write(Store.packedDevice(packed), Store.packedOffset(packed), dst, i);
        }
    }

    @Test
    void aFailedWriteFreesEveryExtentAllocatedAndReleasesTheDram() throws Exception {
        KvConfig.Builder b = TestEngines.config(TestEngines.deviceDirs(root, 3), "portable");
        // Device 2 fails every request: the batches to devices 0 and 1 succeed first.
        try (Store store = new Store(b.faultInjection(FaultInjection.builder(1).eio(1).onlyOnDevice(2).build())
                .build())) {
            long before = free(store);
            assertThrows(KvIoException.class, () -> {
                try (ExtentBatchWriter w = new ExtentBatchWriter(store, "a", 2)) {
                    writeExtents(w, store, 7);
                    w.finish();
                    w.keep();
                }
            });
            assertEquals(before, free(store), "a failed write leaves no extent allocated");
            assertEquals(0, store.dram().inUseBytes(), "every staging slot was released");
        }
    }

    @Test
    void keptExtentsStayAllocated() throws Exception {
        try (Store store = new Store(TestEngines.config(TestEngines.deviceDirs(root, 2), "portable").build())) {
            long before = free(store);
            try (ExtentBatchWriter w = new ExtentBatchWriter(store, "a", 2)) {
                writeExtents(w, store, 5);
                w.finish();
                w.keep();
            }
            assertEquals(before - 5 * 4096, free(store));
            assertEquals(0, store.dram().inUseBytes());
            // Without keep (e.g. building the layout failed after the writes), close frees them.
            try (ExtentBatchWriter w = new ExtentBatchWriter(store, "a", 2)) {
                writeExtents(w, store, 3);
                w.finish();
            }
            assertEquals(before - 5 * 4096, free(store));
        }
    }
}
