package io.kvoffload.internal.dram;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.KvDramExhaustedException;
import io.kvoffload.spi.DramSlabListener;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class DramPoolTest {
    @Test
    void slotsAreAlignedRecycledAndBudgeted() {
        List<String> events = new ArrayList<>();
        try (DramPool pool = new DramPool(1 << 20, 256 << 10)) {
            pool.addListener(new DramSlabListener() {
                @Override
                public void slabAllocated(int slabId, MemorySegment slab) {
                    events.add("+" + slabId + ":" + slab.byteSize());
                }

                @Override
                public void slabFreed(int slabId, MemorySegment slab) {
                    events.add("-" + slabId);
                }
            });
            DramSlot a = pool.acquire(5000); // rounds to 8192
            assertEquals(8192, a.byteSize());
            assertEquals(0, a.segment().address() % 4096);
            List<DramSlot> all = new ArrayList<>();
            all.add(a);
            for (int i = 1; i < 128; i++) {
                all.add(pool.acquire(8192));
            }
            assertEquals(1 << 20, pool.reservedBytes());
            assertNull(pool.tryAcquire(8192));
            var e = assertThrows(KvDramExhaustedException.class, () -> pool.acquire(8192));
            assertTrue(e.getMessage().contains("DRAM budget exhausted: 1048576 bytes"), e.getMessage());
            pool.release(a);
            assertThrows(IllegalStateException.class, () -> pool.release(a));
            DramSlot again = pool.acquire(8192);
            assertEquals(a.segment().address(), again.segment().address(), "slots are recycled, not reallocated");
            assertEquals(List.of("+0:262144", "+1:262144", "+2:262144", "+3:262144"), events);
        }
        assertEquals(List.of("+0:262144", "+1:262144", "+2:262144", "+3:262144", "-3", "-2", "-1", "-0"), events);
    }
}
