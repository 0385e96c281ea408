package io.kvoffload.cuda;

import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fixed-size blocks carved from chunks, under a byte budget that can change at run time without
 * moving a resident block: SwiftCache's block-major layout [SwiftCache §3.4, Fig. 6], where a block
 * holds everything that belongs to it contiguously, so capacity is added or removed a chunk at a
 * time and no other block is touched.
 *
 * <p>Chunks are taken lazily, when a block is needed and the budget has room for another chunk.
 * Shrinking lowers the chunk limit: fully free chunks are freed at once; chunks still holding
 * blocks beyond the limit are marked <em>retiring</em>, get no new blocks, and are freed when their
 * last block is (the caller may also evict their blocks: {@link #blocksInRetiringChunks}). Growing
 * raises the limit and un-retires chunks first. Allocation prefers the fullest chunk with room, so
 * sparse chunks drain and a later shrink finds free chunks.
 *
 * <p>A block id is {@code chunkSlot × blocksPerChunk + index}; ids stay valid until freed. Not
 * thread-safe: the owner serialises calls.
 *
 * @param <C> a chunk of memory, as {@link ChunkMemory} hands it out
 */
public final class BlockMajorPool<C> implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(BlockMajorPool.class);

    private final long blockBytes;
    private final int blocksPerChunk;
    private final long chunkBytes;
    private final ChunkMemory<C> memory;
    private final List<Chunk<C>> slots = new ArrayList<>(); // null: slot free (chunk freed)
    private long budgetBytes;
    private int chunkLimit;
    private int liveChunks;
    private int usedBlocks;
    private boolean closed;

    private static final class Chunk<C> {
        final C memory;
        final int[] free; // stack of free block indices
        int freeCount;
        boolean retiring;

        Chunk(C memory, int blocks) {
            this.memory = memory;
            this.free = new int[blocks];
            for (int i = 0; i < blocks; i++) {
                free[i] = blocks - 1 - i; // pop gives 0 first: blocks fill a chunk front to back
            }
            this.freeCount = blocks;
        }
    }

    /**
     * @param blockBytes bytes of one block (> 0)
     * @param blocksPerChunk blocks per chunk (1..2^20)
     * @param budgetBytes initial budget; the pool never holds more than {@code budget / chunkBytes} chunks
     */
    public BlockMajorPool(long blockBytes, int blocksPerChunk, long budgetBytes, ChunkMemory<C> memory) {
        if (blockBytes <= 0) {
            throw new IllegalArgumentException("blockBytes = " + blockBytes + "; allowed: 1 or more");
        }
        if (blocksPerChunk < 1 || blocksPerChunk > (1 << 20)) {
            throw new IllegalArgumentException("blocksPerChunk = " + blocksPerChunk + "; allowed: 1..1048576");
        }
        if (blockBytes > Long.MAX_VALUE / blocksPerChunk) {
            throw new IllegalArgumentException("blockBytes × blocksPerChunk = " + blockBytes + " × " + blocksPerChunk
                    + " overflows; allowed: a chunk below 2^63 bytes");
        }
        if (memory == null) {
            throw new IllegalArgumentException("memory is null");
        }
        this.blockBytes = blockBytes;
        this.blocksPerChunk = blocksPerChunk;
        this.chunkBytes = blockBytes * blocksPerChunk;
        this.memory = memory;
        setBudget(budgetBytes);
    }

    public long blockBytes() {
        return blockBytes;
    }

    public int blocksPerChunk() {
        return blocksPerChunk;
    }

    public long chunkBytes() {
        return chunkBytes;
    }

    public long budgetBytes() {
        return budgetBytes;
    }

    /** Chunks the budget allows. */
    public int chunkLimit() {
        return chunkLimit;
    }

    /** Chunks allocated now (retiring ones included). */
    public int chunkCount() {
        return liveChunks;
    }

    /** Bytes of chunks allocated now. */
    public long allocatedBytes() {
        return (long) liveChunks * chunkBytes;
    }

    public int usedBlocks() {
        return usedBlocks;
    }

    /** Blocks the budget could hold once every retiring chunk has drained. */
    public long capacityBlocks() {
        return (long) chunkLimit * blocksPerChunk;
    }

    /** Chunks marked retiring: beyond the limit, still holding blocks. */
    public int retiringCount() {
        int n = 0;
        for (Chunk<C> c : slots) {
            if (c != null && c.retiring) {
                n++;
            }
        }
        return n;
    }

    /**
     * Takes a free block, allocating a chunk when none has room and the budget allows one.
     *
     * @return the block id, or -1 when the budget is exhausted
     */
    public int allocate() {
        ensureOpen();
        int best = -1;
        for (int s = 0; s < slots.size(); s++) {
            Chunk<C> c = slots.get(s);
            if (c != null && !c.retiring && c.freeCount > 0
                    && (best < 0 || c.freeCount < slots.get(best).freeCount)) {
                best = s;
            }
        }
        if (best < 0) {
            if (liveChunks >= chunkLimit) {
                return -1;
            }
            best = addChunk();
        }
        Chunk<C> c = slots.get(best);
        int index = c.free[--c.freeCount];
        usedBlocks++;
        return best * blocksPerChunk + index;
    }

    private int addChunk() {
        C mem = memory.allocate(chunkBytes);
        Chunk<C> c = new Chunk<>(mem, blocksPerChunk);
        liveChunks++;
        for (int s = 0; s < slots.size(); s++) {
            if (slots.get(s) == null) {
                slots.set(s, c);
                return s;
            }
        }
        slots.add(c);
        return slots.size() - 1;
    }

    /** Returns a block; freeing the last block of a retiring chunk frees the chunk. */
    public void free(int block) {
        ensureOpen();
        Chunk<C> c = chunkOf(block);
        int index = block % blocksPerChunk;
        for (int i = 0; i < c.freeCount; i++) {
            if (c.free[i] == index) {
                throw new IllegalStateException("block " + block + " freed twice");
            }
        }
        c.free[c.freeCount++] = index;
        usedBlocks--;
        if (c.retiring && c.freeCount == blocksPerChunk) {
            release(block / blocksPerChunk);
        }
    }

    /** The chunk that holds {@code block}. */
    public C chunk(int block) {
        return chunkOf(block).memory;
    }

    /** Byte offset of {@code block} inside its chunk. */
    public long offsetInChunk(int block) {
        chunkOf(block);
        return (block % blocksPerChunk) * blockBytes;
    }

    /** Whether {@code block} sits in a retiring chunk (it blocks a shrink from taking effect). */
    public boolean inRetiringChunk(int block) {
        return chunkOf(block).retiring;
    }

    /** Blocks now in use inside retiring chunks. */
    public int blocksInRetiringChunks() {
        int n = 0;
        for (Chunk<C> c : slots) {
            if (c != null && c.retiring) {
                n += blocksPerChunk - c.freeCount;
            }
        }
        return n;
    }

    private Chunk<C> chunkOf(int block) {
        int s = block < 0 ? -1 : block / blocksPerChunk;
        Chunk<C> c = s >= 0 && s < slots.size() ? slots.get(s) : null;
        if (c == null) {
            throw new IllegalArgumentException("block = " + block + " is not a block of this pool; allowed: ids returned"
                    + " by allocate() and not yet freed (0.." + ((long) slots.size() * blocksPerChunk - 1) + ")");
        }
        return c;
    }

    /**
     * Changes the budget. Never moves a block: growing raises the chunk limit (retiring chunks come
     * back into service first); shrinking frees fully free chunks and marks the emptiest chunks with
     * blocks in use as retiring until at most {@link #chunkLimit()} chunks stay in service.
     */
    public void setBudget(long budgetBytes) {
        if (budgetBytes < 0) {
            throw new IllegalArgumentException("budgetBytes = " + budgetBytes + "; allowed: 0 or more");
        }
        this.budgetBytes = budgetBytes;
        this.chunkLimit = (int) Math.min(Integer.MAX_VALUE - 8, budgetBytes / chunkBytes);
        if (closed) {
            return;
        }
        // Free chunks go first: they cost nothing to drop.
        for (int s = 0; s < slots.size() && liveChunks > chunkLimit; s++) {
            Chunk<C> c = slots.get(s);
            if (c != null && c.freeCount == blocksPerChunk) {
                release(s);
            }
        }
        int inService = 0;
        for (Chunk<C> c : slots) {
            if (c != null && !c.retiring) {
                inService++;
            }
        }
        // Retire the emptiest chunks still in service until the rest fit the limit.
        while (inService > chunkLimit) {
            int pick = -1;
            for (int s = 0; s < slots.size(); s++) {
                Chunk<C> c = slots.get(s);
                if (c != null && !c.retiring && (pick < 0 || c.freeCount > slots.get(pick).freeCount)) {
                    pick = s;
                }
            }
            slots.get(pick).retiring = true;
            inService--;
        }
        // Un-retire (fullest first) while the limit has room: their blocks never moved.
        while (inService < chunkLimit) {
            int pick = -1;
            for (int s = 0; s < slots.size(); s++) {
                Chunk<C> c = slots.get(s);
                if (c != null && c.retiring && (pick < 0 || c.freeCount < slots.get(pick).freeCount)) {
                    pick = s;
                }
            }
            if (pick < 0) {
                break;
            }
            slots.get(pick).retiring = false;
            inService++;
        }
        LOG.debug("block pool budget {} bytes: {} chunks allowed, {} allocated, {} retiring", budgetBytes, chunkLimit,
                liveChunks, retiringCount());
    }

    private void release(int slot) {
        Chunk<C> c = slots.get(slot);
        slots.set(slot, null);
        liveChunks--;
        // A copy may still target the chunk: drain before handing it back.
        memory.drain();
        memory.free(c.memory);
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("block pool is closed");
        }
    }

    /** Drains copies and frees every chunk. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        memory.drain();
        for (int s = 0; s < slots.size(); s++) {
            Chunk<C> c = slots.get(s);
            if (c != null) {
                slots.set(s, null);
                memory.free(c.memory);
            }
        }
        liveChunks = 0;
        usedBlocks = 0;
    }
}
