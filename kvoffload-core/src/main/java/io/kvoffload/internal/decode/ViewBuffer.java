package io.kvoffload.internal.decode;

import io.kvoffload.internal.storage.HeadShards;
import io.kvoffload.KvShape;
import io.kvoffload.internal.dram.DramPool;
import io.kvoffload.internal.dram.DramSlot;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The rows of one {@link io.kvoffload.KvView} in DRAM: positions, a block table, per-row head masks
 * and, per KV head, keys and values contiguous. The fetch pipeline writes rows here; the public view
 * hands read-only scopes of them to the engine. One DRAM slot (page-locked when the GPU tier is on,
 * so the HBM tier copies every region straight from it), grown (with headroom) only when a step
 * needs more rows than any before.
 */
public final class ViewBuffer {
    private final KvShape shape;
    private final int rowBytes;
    private final int blockTokens;
    private int capacity;
    private DramSlot memory;
    private MemorySegment positions;
    private MemorySegment blockTable;
    /** Per row, an int64 (native byte order) whose bit h says KV head h landed; meaningful only while {@link #partial}. */
    private MemorySegment masks;
    private final MemorySegment[] keys;
    private final MemorySegment[] values;
    /** The layer this step fetches and the rows it fills. */
    private int layer;
    private int rows;
    /**
     * Whether this step has rows that hold only some KV heads (a per-head plan read some tokens'
     * head groups only); then {@link #masks} says which heads each row holds, else every row is whole.
     */
    private boolean partial;

    public ViewBuffer(KvShape shape, int blockTokens) {
        this.shape = shape;
        this.rowBytes = shape.headDim() * shape.dtype().bytes();
        this.blockTokens = blockTokens;
        this.keys = new MemorySegment[shape.kvHeads()];
        this.values = new MemorySegment[shape.kvHeads()];
    }

    /** Starts a step of {@code layer} with {@code rows} rows, growing the memory if needed. */
    public void begin(int layer, int rows, DramPool dram) {
        ensureCapacity(rows, dram);
        this.layer = layer;
        this.rows = rows;
        this.partial = false;
    }

    /**
     * Some of this step's rows will hold only some KV heads: from now on each row records the heads
     * written into it ({@link #headMask}); a row nothing is written into holds none. Called by the
     * pipeline before it writes the step's rows.
     */
    public void expectPartialRows() {
        if (shape.kvHeads() > Long.SIZE) {
            throw new IllegalStateException("per-head rows need at most " + Long.SIZE + " KV heads; the shape has "
                    + shape.kvHeads());
        }
        for (int r = 0; r < rows; r++) {
            masks.setAtIndex(ValueLayout.JAVA_LONG, r, 0L);
        }
        partial = true;
    }

    /** Whether some row may hold only some KV heads ({@link #expectPartialRows} was called this step). */
    public boolean partialRows() {
        return partial;
    }

    /** The KV heads row {@code row} holds, bit h for KV head h; -1 (every bit) when every row is whole. */
    public long headMask(int row) {
        return partial ? masks.getAtIndex(ValueLayout.JAVA_LONG, row) : -1L;
    }

    /**
     * The head masks of every row, capacity-long: int64 per row in native byte order, bit h = KV
     * head h landed. Meaningful for the first {@link #rows()} rows only while {@link #partialRows()};
     * otherwise they hold stale bytes (every row is whole).
     */
    public MemorySegment headMasks() {
        return masks;
    }

    private void ensureCapacity(int tokens, DramPool dram) {
        if (tokens <= capacity && memory != null) {
            return;
        }
        // Headroom: a step selects a few more rows than the last one as often as not, and growing
        // costs a new DRAM slot (a new slab the first time) inside prefetch.
        int cap = Math.max(tokens + tokens / 4, Math.max(64, capacity + capacity / 2));
        int blocks = (cap + blockTokens - 1) / blockTokens;
        long posBytes = align(4L * cap);
        long tableBytes = align(4L * blocks);
        long maskBytes = align(8L * cap);
        long headBytes = align((long) cap * rowBytes);
        long total = posBytes + tableBytes + maskBytes + 2L * shape.kvHeads() * headBytes;
        DramSlot m = dram.acquire(Long.highestOneBit(total - 1) << 1); // few size classes as views grow
        if (memory != null) {
            dram.release(memory);
        }
        memory = m;
        capacity = cap;
        MemorySegment s = m.segment();
        positions = s.asSlice(0, 4L * cap);
        blockTable = s.asSlice(posBytes, 4L * blocks);
        for (int b = 0; b < blocks; b++) {
            // The gathered rows are contiguous, so logical block b is physical block b.
            blockTable.setAtIndex(ValueLayout.JAVA_INT, b, b);
        }
        masks = s.asSlice(posBytes + tableBytes, 8L * cap);
        long o = posBytes + tableBytes + maskBytes;
        for (int h = 0; h < shape.kvHeads(); h++) {
            keys[h] = s.asSlice(o, (long) cap * rowBytes);
            o += headBytes;
        }
        for (int h = 0; h < shape.kvHeads(); h++) {
            values[h] = s.asSlice(o, (long) cap * rowBytes);
            o += headBytes;
        }
    }

    private static long align(long bytes) {
        return (bytes + 63) & ~63L;
    }

    /** Hands the memory back. */
    public void free(DramPool dram) {
        if (memory != null) {
            dram.release(memory);
            memory = null;
            capacity = 0;
        }
    }

    /** KV heads of a row. */
    public int keyHeads() {
        return keys.length;
    }

    public int capacity() {
        return capacity;
    }

    public int layer() {
        return layer;
    }

    public int rows() {
        return rows;
    }

    public int blockTokens() {
        return blockTokens;
    }

    /** Writes row {@code row}: its position and a stored entry (K of every head, then V) at {@code src[offset]}. */
    public void putEntry(int row, int position, MemorySegment src, long offset) {
        putRow(row, position, src, offset, src, offset + (long) shape.kvHeads() * rowBytes);
    }

    /**
     * Writes head group {@code shard} of {@code shards} of row {@code row}: its position, and the
     * group's heads' K then V at {@code src[offset]} (a head-sharded layout's stored entry); the
     * row is whole once every group has landed.
     */
    public void putShard(int row, int position, int shard, int shards, MemorySegment src, long offset) {
        putShard(row, position, shard, shards, src, offset, src, offset + (long) (keys.length / shards) * rowBytes);
    }

    /**
     * Writes head group {@code shard} of {@code shards} of row {@code row}: its position, the group's
     * heads' K at {@code k[kOffset]} and their V at {@code v[vOffset]} (a head-sharded KVSwap group
     * keeps a token's K and V apart); the row is whole once every group has landed.
     */
    public void putShard(int row, int position, int shard, int shards, MemorySegment k, long kOffset, MemorySegment v,
            long vOffset) {
        positions.setAtIndex(ValueLayout.JAVA_INT, row, position);
        int heads = keys.length / shards;
        if (partial) {
            masks.setAtIndex(ValueLayout.JAVA_LONG, row,
                    masks.getAtIndex(ValueLayout.JAVA_LONG, row) | HeadShards.groupBits(shard, heads));
        }
        long dst = (long) row * rowBytes;
        for (int i = 0; i < heads; i++) {
            int h = shard * heads + i;
            MemorySegment.copy(k, kOffset + (long) i * rowBytes, keys[h], dst, rowBytes);
            MemorySegment.copy(v, vOffset + (long) i * rowBytes, values[h], dst, rowBytes);
        }
    }

    /** Writes row {@code row}: its position, K of every head at {@code k[kOffset]}, V at {@code v[vOffset]}. */
    public void putRow(int row, int position, MemorySegment k, long kOffset, MemorySegment v, long vOffset) {
        positions.setAtIndex(ValueLayout.JAVA_INT, row, position);
        if (partial) {
            masks.setAtIndex(ValueLayout.JAVA_LONG, row, -1L);
        }
        long dst = (long) row * rowBytes;
        for (int h = 0; h < keys.length; h++) {
            MemorySegment.copy(k, kOffset + (long) h * rowBytes, keys[h], dst, rowBytes);
            MemorySegment.copy(v, vOffset + (long) h * rowBytes, values[h], dst, rowBytes);
        }
    }

    /** Reassembles row {@code row} as a token-major entry at {@code dst[offset]} (a whole row only). */
    public void copyEntryTo(int row, MemorySegment dst, long offset) {
        long held = headMask(row);
        if (held != HeadShards.headBits(0, shape.kvHeads()) && held != -1L) {
            throw new IllegalStateException("row " + row + " holds only KV heads " + Long.toBinaryString(held)
                    + "; a partial row is never copied as a whole entry");
        }
        long src = (long) row * rowBytes;
        int kv = shape.kvHeads();
        for (int h = 0; h < kv; h++) {
            MemorySegment.copy(keys[h], src, dst, offset + (long) h * rowBytes, rowBytes);
            MemorySegment.copy(values[h], src, dst, offset + (long) (kv + h) * rowBytes, rowBytes);
        }
    }

    /**
     * Copies head group {@code shard} of {@code shards} of row {@code row} to {@code dst[offset]} as a
     * head-sharded layout stores it ({@link #putShard}'s input: the group's heads' K, then their V).
     *
     * @throws IllegalStateException if the row does not hold that group
     */
    public void copyShardTo(int row, int shard, int shards, MemorySegment dst, long offset) {
        int heads = keys.length / shards;
        long bits = HeadShards.groupBits(shard, heads);
        if ((headMask(row) & bits) != bits) {
            throw new IllegalStateException("row " + row + " does not hold head group " + shard + " of " + shards
                    + "; only a group the row holds is copied");
        }
        long src = (long) row * rowBytes;
        for (int i = 0; i < heads; i++) {
            int h = shard * heads + i;
            MemorySegment.copy(keys[h], src, dst, offset + (long) i * rowBytes, rowBytes);
            MemorySegment.copy(values[h], src, dst, offset + (long) (heads + i) * rowBytes, rowBytes);
        }
    }

    /** Position of row {@code row}. */
    public int position(int row) {
        return positions.getAtIndex(ValueLayout.JAVA_INT, row);
    }

    public MemorySegment positions() {
        return positions;
    }

    public MemorySegment blockTable() {
        return blockTable;
    }

    public MemorySegment keys(int kvHead) {
        return keys[kvHead];
    }

    public MemorySegment values(int kvHead) {
        return values[kvHead];
    }
}
