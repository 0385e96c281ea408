package io.kvoffload.internal.elastic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/**
 * SwiftCache's unit arithmetic and the block-major allocator: the unit is the least common multiple
 * of the entry sizes, and whatever sequence of grow, shrink, allocate and free, no unit in use is
 * handed out again, free units are whole (every chunk's units are either in use or free, and a
 * chunk with none in use beyond the budget is gone), and the memory held matches the budget.
 */
class ElasticUnitProperties {

    @Property(tries = 300)
    void unitIsTheLeastCommonMultiple(@ForAll @Size(min = 1, max = 3) List<@IntRange(min = 1, max = 60) Integer> sizes) {
        long[] s = sizes.stream().mapToLong(Integer::longValue).toArray();
        MinimumElasticUnit u = MinimumElasticUnit.of(s);
        for (long e : s) {
            assertEquals(0, u.unitBytes() % e, "unit " + u.unitBytes() + " holds whole entries of " + e);
            assertEquals(u.unitBytes() / e, u.entriesPerUnit(e), "MEU = LCM / entry size (Eq. 9)");
        }
        // Least: no smaller positive multiple of the first size is a multiple of all.
        for (long m = s[0]; m < u.unitBytes(); m += s[0]) {
            long mm = m;
            assertFalse(java.util.Arrays.stream(s).allMatch(e -> mm % e == 0), m + " is a smaller common multiple");
        }
    }

    @Property(tries = 200)
    void noLiveUnitIsReusedAndNothingFragments(@ForAll @IntRange(min = 1, max = 6) int perChunk,
            @ForAll boolean keepFreeChunks, @ForAll @IntRange(min = 0, max = 1 << 20) int seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        MinimumElasticUnit unit = MinimumElasticUnit.of(64, 96); // 192 bytes
        long chunk = unit.unitBytes() * perChunk;
        Set<Integer> live = new HashSet<>();
        int[] chunkEvents = new int[2];
        Set<Integer> allocatedSlots = new HashSet<>();
        BlockMajorAllocator a = new BlockMajorAllocator(unit, perChunk, rnd.nextInt(0, 6) * chunk, keepFreeChunks,
                new BlockMajorAllocator.Chunks() {
                    @Override
                    public void allocate(int slot, long bytes) {
                        assertEquals(chunk, bytes);
                        assertTrue(allocatedSlots.add(slot), "slot " + slot + " allocated twice");
                        chunkEvents[0]++;
                    }

                    @Override
                    public void free(int slot) {
                        assertTrue(allocatedSlots.remove(slot), "slot " + slot + " freed without a chunk");
                        chunkEvents[1]++;
                    }
                });
        List<Integer> order = new ArrayList<>();
        for (int op = 0; op < 120; op++) {
            int kind = rnd.nextInt(10);
            if (kind < 5) {
                int u = a.allocate();
                if (u < 0) {
                    assertEquals(a.chunkLimit() * (long) perChunk, (long) a.chunkLimit() * perChunk);
                    assertEquals(0, a.freeUnitsInService(), "refused while a unit in service is free");
                    assertTrue(a.chunkCount() >= a.chunkLimit(), "refused while the budget has room for a chunk");
                } else {
                    assertTrue(live.add(u), "unit " + u + " handed out while in use");
                    order.add(u);
                }
            } else if (kind < 8 && !order.isEmpty()) {
                int u = order.remove(rnd.nextInt(order.size()));
                live.remove(u);
                a.free(u);
                assertFalse(a.inUse(u));
            } else {
                a.setBudget(rnd.nextInt(0, 6) * chunk);
            }
            // The accounting: every allocated chunk's units are in use or free, none lost.
            assertEquals(live.size(), a.usedUnits());
            long freeAll = 0;
            for (int s = 0; s < a.slotCount(); s++) {
                if (a.chunkLive(s)) {
                    freeAll += perChunk - a.usedInChunk(s);
                    if (a.usedInChunk(s) == 0) {
                        assertTrue(keepFreeChunks, "an empty chunk stays only where free chunks are kept");
                    }
                }
            }
            assertEquals((long) a.chunkCount() * perChunk, live.size() + freeAll);
            assertEquals(allocatedSlots.size(), a.chunkCount());
            assertEquals(a.allocatedBytes(), (long) a.chunkCount() * chunk);
            // Memory beyond the budget is only ever chunks that still hold units (retiring).
            long beyond = Math.max(0, a.chunkCount() - a.chunkLimit());
            assertTrue(beyond <= a.retiringCount(), beyond + " chunks beyond the limit, " + a.retiringCount() + " retiring");
            for (int u : live) {
                assertTrue(a.inUse(u));
            }
        }
        for (int u : order) {
            a.free(u);
        }
        a.setBudget(0);
        assertEquals(0, a.chunkCount(), "every chunk goes once no unit is used and the budget is 0");
        assertEquals(chunkEvents[0], chunkEvents[1]);
        a.close();
    }
}
