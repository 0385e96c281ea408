package io.kvoffload.internal.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.FaultInjection;
import io.kvoffload.KvConfig;
import io.kvoffload.KvIoException;
import io.kvoffload.internal.dram.DramSlot;
import io.kvoffload.spi.IoBatch;
import io.kvoffload.testing.TestEngines;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * ENOSPC at run time (pools are preallocated, so only thin-provisioned or copy-on-write storage
 * gives it): the device is marked full, new extents go to the other devices, and the device takes
 * writes again by itself once one succeeds there.
 */
class EnospcTest {
    @TempDir
    Path root;

    static void write(Store store, int device, long offset) {
        DramSlot slot = store.dram().acquire(4096);
        try {
            IoBatch b = store.backend().newBatch(1);
            b.addWrite(device, offset, slot.segment().asSlice(0, 4096), 0);
            store.execute(b);
        } finally {
            store.dram().release(slot);
        }
    }

    @Test
    void blocksRefusedWithEnospcAreWrittenElsewhereWithinTheSameCall() throws Exception {
        java.util.List<Path> dirs = TestEngines.deviceDirs(root.resolve("e"), 2);
        io.kvoffload.KvShape shape = new io.kvoffload.KvShape(2, 8, 2, 16, io.kvoffload.DType.BF16);
        KvConfig faulty = TestEngines.config(dirs, "portable").blockTokens(16)
                .faultInjection(FaultInjection.builder(1).enospc(1).onlyOnDevice(1).build()).build();
        try (io.kvoffload.KvEngine e = io.kvoffload.KvEngine.open(faulty)) {
            try (io.kvoffload.KvSequence s = e.createSequence("a", shape)) {
                TestEngines.append(s, 4, 200, 64); // half its blocks prefer device 1, which says ENOSPC
                s.commit();
            }
            io.kvoffload.KvStats st = e.stats();
            assertTrue(st.devices().get(1).full(), st.toString());
            assertEquals(0, st.devices().get(1).writes(), "nothing was written to the full device");
            try (io.kvoffload.KvSequence s = e.openSequence("a")) {
                assertEquals(null, TestEngines.verify(s, 4, TestEngines.all(200)));
            }
        }
        try (io.kvoffload.KvEngine e = io.kvoffload.KvEngine.open(TestEngines.config(dirs, "portable").blockTokens(16)
                .build()); io.kvoffload.KvSequence s = e.openSequence("a")) {
            assertEquals(null, TestEngines.verify(s, 4, TestEngines.all(200)));
        }
    }

    @Test
    void aDeviceThatSaysEnospcIsAvoidedAndTakesWritesAgainWhenSpaceReturns() throws Exception {
        KvConfig.Builder b = TestEngines.config(TestEngines.deviceDirs(root, 2), "portable");
        try (Store store = new Store(b.faultInjection(FaultInjection.builder(1).enospc(1).build()).build())) {
            KvIoException e = assertThrows(KvIoException.class, () -> write(store, 0, 0));
            assertEquals(28, e.errno());
            assertTrue(store.devices().get(0).full());
            assertFalse(store.devices().get(0).failure() != null, "full is not failed");
            // The next extent preferring device 0 goes to device 1.
            assertEquals(1, Store.packedDevice(store.allocate(0, 4096, "t")));
        }
        try (Store store = new Store(b.faultInjection(null).build())) {
            store.devices().get(0).full(true);
            store.devices().get(1).full(true);
            // Every device said full: they are still tried, so writing resumes once space returns.
            long at = store.allocate(0, 4096, "t");
            assertEquals(0, Store.packedDevice(at));
            write(store, 0, Store.packedOffset(at));
            assertFalse(store.devices().get(0).full(), "a write that succeeds clears the mark");
            assertTrue(store.devices().get(1).full());
        }
    }
}
