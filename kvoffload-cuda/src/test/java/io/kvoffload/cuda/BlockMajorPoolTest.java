package io.kvoffload.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class BlockMajorPoolTest {
    static final long BLOCK = 256;
    static final int PER_CHUNK = 4;

    @Test
    void chunksAreTakenLazilyAndTheBudgetCapsThem() {
        HostChunks mem = new HostChunks();
        try (BlockMajorPool<MemorySegment> pool = new BlockMajorPool<>(BLOCK, PER_CHUNK, 3 * BLOCK * PER_CHUNK, mem)) {
            assertEquals(0, pool.chunkCount());
            Set<Integer> ids = new HashSet<>();
            for (int i = 0; i < 12; i++) {
                int b = pool.allocate();
                assertTrue(b >= 0);
                assertTrue(ids.add(b), "block ids are distinct");
            }
            assertEquals(3, pool.chunkCount());
            assertEquals(-1, pool.allocate(), "budget of 3 chunks is exhausted");
            assertEquals(12, pool.usedBlocks());
            assertEquals(3, mem.allocations);
        }
        assertEquals(3, mem.frees);
    }

    @Test
    void growingAddsChunksAndMovesNothing() {
        HostChunks mem = new HostChunks();
        try (BlockMajorPool<MemorySegment> pool = new BlockMajorPool<>(BLOCK, PER_CHUNK, BLOCK * PER_CHUNK, mem)) {
            List<Integer> blocks = new ArrayList<>();
            for (int i = 0; i < PER_CHUNK; i++) {
                blocks.add(pool.allocate());
            }
            List<MemorySegment> chunksBefore = blocks.stream().map(pool::chunk).toList();
            List<Long> offsetsBefore = blocks.stream().map(pool::offsetInChunk).toList();
            pool.setBudget(2 * BLOCK * PER_CHUNK);
            assertTrue(pool.allocate() >= 0);
            assertEquals(2, pool.chunkCount());
            for (int i = 0; i < blocks.size(); i++) {
                assertSame(chunksBefore.get(i), pool.chunk(blocks.get(i)));
                assertEquals(offsetsBefore.get(i), pool.offsetInChunk(blocks.get(i)));
            }
        }
    }

    @Test
    void shrinkingFreesOnlyUnusedChunksAndRetiresTheRest() {
        HostChunks mem = new HostChunks();
        try (BlockMajorPool<MemorySegment> pool = new BlockMajorPool<>(BLOCK, PER_CHUNK, 3 * BLOCK * PER_CHUNK, mem)) {
            for (int i = 0; i < 12; i++) {
                assertEquals(i, pool.allocate(), "chunks fill front to back, one after another");
            }
            for (int id : new int[] {0, 1, 2, 3, 4, 5, 6}) {
                pool.free(id); // chunk 0 empty, chunk 1 holds block 7, chunk 2 full
            }
            MemorySegment chunk2 = pool.chunk(8);
            pool.setBudget(BLOCK * PER_CHUNK); // one chunk allowed
            assertEquals(1, pool.chunkLimit());
            assertEquals(2, pool.chunkCount(), "the free chunk went at once; chunks in use stay");
            assertEquals(1, mem.frees);
            assertEquals(1, pool.retiringCount(), "the emptier chunk in use retires");
            assertTrue(pool.inRetiringChunk(7));
            assertFalse(pool.inRetiringChunk(8));
            assertEquals(1, pool.blocksInRetiringChunks());
            assertEquals(-1, pool.allocate(), "the chunk in service is full and no new chunk is allowed");
            assertSame(chunk2, pool.chunk(8), "resident blocks did not move");
            pool.free(7); // the retiring chunk's last block: the chunk goes
            assertEquals(2, mem.frees);
            assertEquals(1, pool.chunkCount());
            assertEquals(0, pool.retiringCount());
        }
    }

    @Test
    void growingAgainUnretiresAChunk() {
        HostChunks mem = new HostChunks();
        try (BlockMajorPool<MemorySegment> pool = new BlockMajorPool<>(BLOCK, PER_CHUNK, 2 * BLOCK * PER_CHUNK, mem)) {
            for (int i = 0; i < 2 * PER_CHUNK; i++) {
                pool.allocate();
            }
            pool.setBudget(BLOCK * PER_CHUNK);
            assertEquals(1, pool.retiringCount());
            pool.setBudget(2 * BLOCK * PER_CHUNK);
            assertEquals(0, pool.retiringCount());
            assertEquals(2, pool.chunkCount());
        }
    }

    @Test
    void badArgumentsNameTheValue() {
        HostChunks mem = new HostChunks();
        var e = assertThrows(IllegalArgumentException.class, () -> new BlockMajorPool<>(0, 4, 1024, mem));
        assertTrue(e.getMessage().contains("blockBytes = 0"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new BlockMajorPool<>(64, 0, 1024, mem));
        assertTrue(e.getMessage().contains("blocksPerChunk = 0"), e.getMessage());
        try (BlockMajorPool<MemorySegment> pool = new BlockMajorPool<>(64, 4, 1024, mem)) {
            e = assertThrows(IllegalArgumentException.class, () -> pool.free(99));
            assertTrue(e.getMessage().contains("block = 99"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> pool.setBudget(-1));
            assertTrue(e.getMessage().contains("budgetBytes = -1"), e.getMessage());
            int b = pool.allocate();
            pool.free(b);
            assertThrows(IllegalStateException.class, () -> pool.free(b));
            assertFalse(pool.inRetiringChunk(pool.allocate()));
        }
    }
}
