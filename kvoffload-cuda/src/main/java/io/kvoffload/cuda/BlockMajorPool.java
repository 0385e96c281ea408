package io.kvoffload.cuda;

import io.kvoffload.internal.elastic.BlockMajorAllocator;
import io.kvoffload.internal.elastic.MinimumElasticUnit;
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
 * <p>The unit arithmetic and the chunk bookkeeping are the DRAM tier's: a block is one
 * {@link MinimumElasticUnit} and a {@link BlockMajorAllocator} decides which chunk serves it, so the
 * GPU and DRAM pools grow, shrink and retire chunks the same way. This class adds the memory: each
 * chunk is a {@link ChunkMemory} allocation, and copies are drained before a chunk is freed.
 *
 * <p>Chunks are taken lazily, when a block is needed and the budget has room for another chunk.
 * Shrinking lowers the chunk limit: fully free chunks are freed at once; chunks still holding
 * blocks beyond the limit are marked <em>retiring</em>, get no new blocks, and are freed when their
 * last block is (the caller may also evict their blocks: {@link #blocksInRetiringChunks}). Growing
 * raises the limit and un-retires chunks first. Allocation prefers the fullest chunk with room, so
 * sparse chunks drain and a later shrink finds free chunks. Free chunks within the limit are kept.
 *
 * <p>A block id is {@code chunkSlot × blocksPerChunk + index}; ids stay valid until freed. Not
 * thread-safe: the owner serialises calls.
 *
 * @param <C> a chunk of memory, as {@link ChunkMemory} hands it out
 */
public final class BlockMajorPool<C> implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(BlockMajorPool.class);

    private final ChunkMemory<C> memory;
    private final List<C> chunks = new ArrayList<>(); // by chunk slot; null: no chunk
    private final BlockMajorAllocator blocks;

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
        if (budgetBytes < 0) {
            throw new IllegalArgumentException("budgetBytes = " + budgetBytes + "; allowed: 0 or more");
        }
        if (memory == null) {
            throw new IllegalArgumentException("memory is null");
        }
        this.memory = memory;
        this.blocks = new BlockMajorAllocator(MinimumElasticUnit.of(blockBytes), blocksPerChunk, budgetBytes, true,
                new BlockMajorAllocator.Chunks() {
                    @Override
                    public void allocate(int slot, long bytes) {
                        C c = memory.allocate(bytes);
                        while (chunks.size() <= slot) {
                            chunks.add(null);
                        }
                        chunks.set(slot, c);
                    }

                    @Override
                    public void free(int slot) {
                        C c = chunks.set(slot, null);
                        // A copy may still target the chunk: drain before handing it back.
                        memory.drain();
                        memory.free(c);
                    }
                });
    }

    public long blockBytes() {
        return blocks.unitBytes();
    }

    public int blocksPerChunk() {
        return blocks.unitsPerChunk();
    }

    public long chunkBytes() {
        return blocks.chunkBytes();
    }

    public long budgetBytes() {
        return blocks.budgetBytes();
    }

    /** Chunks the budget allows. */
    public int chunkLimit() {
        return blocks.chunkLimit();
    }

    /** Chunks allocated now (retiring ones included). */
    public int chunkCount() {
        return blocks.chunkCount();
    }

    /** Bytes of chunks allocated now. */
    public long allocatedBytes() {
        return blocks.allocatedBytes();
    }

    public int usedBlocks() {
        return blocks.usedUnits();
    }

    /** Blocks the budget could hold once every retiring chunk has drained. */
    public long capacityBlocks() {
        return blocks.capacityUnits();
    }

    /** Chunks marked retiring: beyond the limit, still holding blocks. */
    public int retiringCount() {
        return blocks.retiringCount();
    }

    /**
     * Takes a free block, allocating a chunk when none has room and the budget allows one.
     *
     * @return the block id, or -1 when the budget is exhausted
     */
    public int allocate() {
        return blocks.allocate();
    }

    /** Returns a block; freeing the last block of a retiring chunk frees the chunk. */
    public void free(int block) {
        check(block);
        blocks.free(block);
    }

    /** The chunk that holds {@code block}. */
    public C chunk(int block) {
        check(block);
        return chunks.get(blocks.chunkSlot(block));
    }

    /** Byte offset of {@code block} inside its chunk. */
    public long offsetInChunk(int block) {
        check(block);
        return blocks.offsetInChunk(block);
    }

    /** Whether {@code block} sits in a retiring chunk (it blocks a shrink from taking effect). */
    public boolean inRetiringChunk(int block) {
        check(block);
        return blocks.inRetiringChunk(block);
    }

    /** Blocks now in use inside retiring chunks. */
    public int blocksInRetiringChunks() {
        return blocks.unitsInRetiringChunks();
    }

    private void check(int block) {
        if (blocks.isClosed()) {
            throw new IllegalStateException("block pool is closed");
        }
        if (block < 0 || !blocks.chunkLive(block / blocks.unitsPerChunk())) {
            throw new IllegalArgumentException("block = " + block + " is not a block of this pool; allowed: ids returned"
                    + " by allocate() and not yet freed (0.."
                    + ((long) blocks.slotCount() * blocks.unitsPerChunk() - 1) + ")");
        }
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
        blocks.setBudget(budgetBytes);
        LOG.debug("block pool budget {} bytes: {} chunks allowed, {} allocated, {} retiring", budgetBytes,
                blocks.chunkLimit(), blocks.chunkCount(), blocks.retiringCount());
    }

    /** Drains copies and frees every chunk. */
    @Override
    public void close() {
        if (blocks.isClosed()) {
            return;
        }
        memory.drain();
        blocks.close();
    }
}
