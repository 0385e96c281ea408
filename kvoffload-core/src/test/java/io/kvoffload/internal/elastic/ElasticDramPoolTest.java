package io.kvoffload.internal.elastic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.KvDramExhaustedException;
import io.kvoffload.internal.dram.DramPool;
import org.junit.jupiter.api.Test;

/** The pool's unit classes, caps and memory accounting, consumer by consumer. */
class ElasticDramPoolTest {

    @Test
    void sizesShareTheLcmUnitAndOldUnitsStayValid() {
        try (DramPool dram = new DramPool(8L << 20, 1L << 20);
                ElasticDramPool pool = new ElasticDramPool(dram, 8L << 20, 64L << 10)) {
            UnitSlots a = new UnitSlots(pool, 512);
            assertEquals(4096, a.unitBytes(), "lcm(4096, 512)");
            assertEquals(8, a.perUnit());
            UnitSlots b = new UnitSlots(pool, 3 * 4096);
            assertEquals(3 * 4096, b.unitBytes(), "widened while empty: lcm(4096, 512, 12288)");
            UnitSlots c = new UnitSlots(pool, 1024);
            assertEquals(4096, c.unitBytes(), "the smallest unit that fits");
            a.grow(3);
            UnitSlots d = new UnitSlots(pool, 5000); // units in use: a class of its own
            assertEquals(MinimumElasticUnit.lcm(4096, 5000), d.unitBytes());
            a.close();
            a.grow(2); // a consumer's unit stays valid after later registrations
            b.grow(1);
            d.grow(1);
            assertEquals(2 * 4096 + 3 * 4096 + d.unitBytes(), pool.usedBytes());
            assertTrue(pool.reservedBytes() >= pool.usedBytes());
            for (UnitSlots s : new UnitSlots[] {a, b, c, d}) {
                s.close();
            }
            assertEquals(0, pool.reservedBytes(), "every chunk freed with its last unit");
            assertEquals(0, dram.reservedBytes());
        }
    }

    @Test
    void theCapBindsCachesNotWindowsAndNeverDropsBelowWhatIsHeld() {
        try (DramPool dram = new DramPool(4L << 20, 1L << 20);
                ElasticDramPool pool = new ElasticDramPool(dram, 64L << 10, 64L << 10)) {
            UnitSlots cache = new UnitSlots(pool, 4096);
            UnitSlots window = new UnitSlots(pool, 4096, false);
            cache.grow(16); // one 64 KiB chunk: the cap
            var full = assertThrows(KvDramExhaustedException.class, () -> cache.grow(1));
            assertTrue(full.getMessage().contains("elastic DRAM pool's budget of 65536"), full.getMessage());
            assertEquals(16, cache.heldUnits(), "a refused grow takes nothing");
            window.takeOne(); // windows are bounded by the DRAM budget only, in chunks of their own
            assertEquals(2 * (64L << 10), pool.reservedBytes());
            var low = assertThrows(IllegalArgumentException.class, () -> pool.setBudget(4096));
            assertTrue(low.getMessage().contains("elastic DRAM budget = 4096"), low.getMessage());
            cache.drop(new int[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, 16);
            assertEquals(64L << 10, pool.reservedBytes(), "the cache's chunk went; the window's stays");
            assertNotEquals(0, window.heldBytes());
            window.close();
            assertEquals(0, pool.reservedBytes());
            var big = assertThrows(KvDramExhaustedException.class, () -> new UnitSlots(pool, 4096, false).grow(1100)); // 4.4 MiB of a 4 MiB DRAM budget
            assertTrue(big.getMessage().contains("DRAM budget exhausted"), big.getMessage());
        }
    }
}
