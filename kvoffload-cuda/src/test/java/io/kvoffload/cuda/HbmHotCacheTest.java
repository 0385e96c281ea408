package io.kvoffload.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.cache.CostEffectiveness;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The hot cache's policy, block bookkeeping and resizing, over host "device" memory. */
class HbmHotCacheTest {
    static final int ENTRY = 64;
    static final long BLOCK = 256;

    /** Item i holds (i % 5 + 1) × 64 bytes: 1..2 blocks. */
    static long itemBytes(int item) {
        return (item % 5 + 1) * (long) ENTRY;
    }

    static byte[] pattern(int item) {
        byte[] b = new byte[(int) itemBytes(item)];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) (item * 31 + i * 7);
        }
        return b;
    }

    private static HbmHotCache<MemorySegment> cache(HostChunks mem, long budget) {
        BlockMajorPool<MemorySegment> pool = new BlockMajorPool<>(BLOCK, 4, budget, mem);
        return new HbmHotCache<>(pool, mem, 16, ENTRY, HbmHotCacheTest::itemBytes, CostEffectiveness.savedIoPerEntry(100, 10));
    }

    private static void uploadAdmitted(HbmHotCache<MemorySegment> c, Arena arena) {
        for (int i = 0; i < c.admittedCount(); i++) {
            int item = c.admitted(i);
            MemorySegment src = arena.allocate(itemBytes(item));
            MemorySegment.copy(pattern(item), 0, src, ValueLayout.JAVA_BYTE, 0, pattern(item).length);
            c.upload(item, src, 0);
        }
    }

    private static void assertBitExact(HbmHotCache<MemorySegment> c, int item, Arena arena) {
        MemorySegment dst = arena.allocate(itemBytes(item));
        c.download(item, dst, 0);
        assertArrayEquals(pattern(item), dst.toArray(ValueLayout.JAVA_BYTE), "item " + item);
    }

    @Test
    void admittedItemsBecomeResidentAndHitsSkipTheCopy() {
        HostChunks mem = new HostChunks();
        try (Arena arena = Arena.ofConfined(); HbmHotCache<MemorySegment> c = cache(mem, 8 * BLOCK)) {
            c.step(new int[] {1, 2, 3}, 3);
            assertEquals(3, c.admittedCount());
            assertFalse(c.resident(1), "admitted but not uploaded yet");
            uploadAdmitted(c, arena);
            for (int item : new int[] {1, 2, 3}) {
                assertTrue(c.resident(item));
                assertBitExact(c, item, arena);
            }
            c.step(new int[] {1, 2}, 2);
            assertEquals(0, c.admittedCount(), "hits admit nothing");
            assertEquals(2, c.hits());
            assertEquals(c.usedBytes(), (long) c.pool().usedBlocks() * BLOCK, "policy and pool agree");
        }
    }

    @Test
    void evictionFreesBlocksAndTheBudgetHolds() {
        HostChunks mem = new HostChunks();
        try (Arena arena = Arena.ofConfined(); HbmHotCache<MemorySegment> c = cache(mem, 4 * BLOCK)) {
            for (int step = 0; step < 50; step++) {
                int[] act = {step % 9, (step * 7) % 9, 4};
                c.step(act, act.length);
                uploadAdmitted(c, arena);
                assertTrue(c.pool().allocatedBytes() <= 4 * BLOCK, "device bytes stay within the budget");
                assertEquals(c.usedBytes(), (long) c.pool().usedBlocks() * BLOCK);
                for (int i = 0; i < c.evictedCount(); i++) {
                    assertFalse(c.admittedItem(c.evicted(i)));
                }
            }
            assertTrue(c.resident(4), "the item activated every step stays");
            assertBitExact(c, 4, arena);
        }
    }

    @Test
    void resizeKeepsResidentBlocksBitExactAndInPlace() {
        HostChunks mem = new HostChunks();
        try (Arena arena = Arena.ofConfined(); HbmHotCache<MemorySegment> c = cache(mem, 16 * BLOCK)) {
            int[] items = {0, 1, 2, 3, 4, 5, 6, 7};
            for (int r = 0; r < 3; r++) {
                c.step(items, items.length);
                uploadAdmitted(c, arena);
            }
            int[] hot = {0, 5};
            for (int r = 0; r < 5; r++) {
                c.step(hot, hot.length); // 0 and 5 become the highest-scoring
            }
            Map<Integer, MemorySegment> chunkOf = new HashMap<>();
            Map<Integer, Long> offsetOf = new HashMap<>();
            for (int item : items) {
                if (c.resident(item)) {
                    int b = c.block(item, 0);
                    chunkOf.put(item, c.pool().chunk(b));
                    offsetOf.put(item, c.pool().offsetInChunk(b));
                }
            }
            c.resize(4 * BLOCK);
            assertTrue(c.pool().allocatedBytes() <= 4 * BLOCK, "device memory fell to the new budget at once: "
                    + c.pool().allocatedBytes());
            assertTrue(c.usedBytes() <= 4 * BLOCK);
            assertTrue(c.evictedCount() > 0);
            int kept = 0;
            for (int item : items) {
                if (c.resident(item)) {
                    kept++;
                    assertBitExact(c, item, arena);
                    assertSame(chunkOf.get(item), c.pool().chunk(c.block(item, 0)), "item " + item + " did not move");
                    assertEquals(offsetOf.get(item), c.pool().offsetInChunk(c.block(item, 0)));
                }
            }
            assertTrue(kept > 0, "something survives a shrink to one chunk");
            c.resize(32 * BLOCK);
            for (int item : items) {
                if (c.resident(item)) {
                    assertBitExact(c, item, arena);
                }
            }
            c.step(items, items.length);
            uploadAdmitted(c, arena);
            for (int item : items) {
                assertTrue(c.resident(item), "after growing, everything fits again: item " + item);
                assertBitExact(c, item, arena);
            }
        }
    }

    @Test
    void resizeToZeroEmptiesTheCache() {
        HostChunks mem = new HostChunks();
        try (Arena arena = Arena.ofConfined(); HbmHotCache<MemorySegment> c = cache(mem, 8 * BLOCK)) {
            c.step(new int[] {1, 2}, 2);
            uploadAdmitted(c, arena);
            c.resize(0);
            assertEquals(0, c.pool().chunkCount());
            assertEquals(0, c.usedBytes());
            assertFalse(c.resident(1));
            c.step(new int[] {1}, 1);
            assertEquals(0, c.admittedCount(), "nothing fits a zero budget");
        }
    }

    @Test
    void uploadChecksTheSourceRange() {
        HostChunks mem = new HostChunks();
        try (Arena arena = Arena.ofConfined(); HbmHotCache<MemorySegment> c = cache(mem, 8 * BLOCK)) {
            c.step(new int[] {4}, 1); // 320 bytes
            MemorySegment small = arena.allocate(100);
            var e = assertThrows(IndexOutOfBoundsException.class, () -> c.upload(4, small, 0));
            assertTrue(e.getMessage().contains("needs 320 bytes"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> c.upload(9, small, 0));
            assertThrows(IllegalArgumentException.class, () -> c.resize(-5));
        }
    }
}
