package io.kvoffload.cuda;

import io.kvoffload.internal.cache.CostEffectiveness;
import io.kvoffload.internal.cache.CostEffectivenessCache;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.function.IntToLongFunction;

/**
 * The HBM hot cache: the hottest clusters (or groups) kept on the GPU under a byte budget, chosen
 * by the same cost-effectiveness policy as the DRAM tier ({@link CostEffectivenessCache}, Swarm
 * Eq. 6), so a hit skips both the SSD read and the PCIe copy.
 *
 * <p>Each item (a cluster or group id chosen by the caller, e.g. {@code layer × clusters + c}) is
 * stored in whole blocks of a {@link BlockMajorPool}; its bytes are split across its blocks in
 * order. The budget can shrink or grow at run time ({@link #resize}) without moving any resident
 * block: shrinking evicts by score first, then the items that pin chunks beyond the new limit.
 *
 * <p>Per step: {@link #step} runs the policy (evicted items' blocks are freed, admitted items get
 * blocks); the caller then {@link #upload}s each {@link #admitted} item's bytes from DRAM. An
 * item is {@link #resident} once uploaded. Not thread-safe.
 *
 * @param <C> the pool's chunk type
 */
public final class HbmHotCache<C> implements AutoCloseable {
    private final BlockMajorPool<C> pool;
    private final ChunkMemory<C> memory;
    private final IntToLongFunction itemBytes;
    private final CostEffectivenessCache policy;
    private int[][] blocks = new int[16][];
    private boolean[] uploaded = new boolean[16];
    private int[] admittedNow = new int[16];
    private int admittedCount;
    private int[] evictedNow = new int[16];
    private int evictedCount;

    /**
     * @param items expected number of item ids (grows as needed)
     * @param entryBytes bytes of one entry (the policy's unit for |C|)
     * @param itemBytes bytes of an item's data (its cluster's entries × entryBytes)
     * @param score the cost-effectiveness function (the DRAM tier's)
     */
    public HbmHotCache(BlockMajorPool<C> pool, ChunkMemory<C> memory, int items, int entryBytes,
            IntToLongFunction itemBytes, CostEffectiveness score) {
        if (pool == null || memory == null || itemBytes == null || score == null) {
            throw new IllegalArgumentException("pool, memory, itemBytes and score must not be null");
        }
        this.pool = pool;
        this.memory = memory;
        this.itemBytes = itemBytes;
        // The policy accounts whole blocks, as the pool spends them.
        this.policy = new CostEffectivenessCache(items, pool.capacityBlocks() * pool.blockBytes(), entryBytes,
                this::footprint, score, null);
    }

    /** Bytes an item occupies in HBM: its data rounded up to whole blocks. */
    public long footprint(int item) {
        long bytes = itemBytes.applyAsLong(item);
        if (bytes < 0) {
            throw new IllegalArgumentException("itemBytes(" + item + ") = " + bytes + "; allowed: 0 or more");
        }
        return blocksFor(bytes) * pool.blockBytes();
    }

    private long blocksFor(long bytes) {
        return Math.max(1, (bytes + pool.blockBytes() - 1) / pool.blockBytes());
    }

    /**
     * One decoding step's activated items (duplicates allowed): updates frequencies, evicts and
     * admits. Afterwards {@link #admitted} lists the items to upload and {@link #evicted} those whose
     * blocks were freed.
     */
    public void step(int[] activated, int n) {
        policy.step(activated, n);
        admittedCount = 0;
        evictedCount = 0;
        for (int i = 0; i < policy.evictedCount(); i++) {
            dropBlocks(policy.evicted(i));
        }
        for (int i = 0; i < policy.admittedCount(); i++) {
            int item = policy.admitted(i);
            if (takeBlocks(item)) {
                admittedNow = push(admittedNow, admittedCount++, item);
            }
        }
    }

    private boolean takeBlocks(int item) {
        int need = (int) blocksFor(itemBytes.applyAsLong(item));
        int[] b = new int[need];
        for (int k = 0; k < need; k++) {
            b[k] = pool.allocate();
            if (b[k] < 0) {
                // Chunks retiring after a shrink can leave fewer blocks than the policy's budget says:
                // give the item back rather than overfill.
                for (int j = 0; j < k; j++) {
                    pool.free(b[j]);
                }
                policy.remove(item);
                return false;
            }
        }
        grow(item);
        blocks[item] = b;
        uploaded[item] = false;
        return true;
    }

    private void dropBlocks(int item) {
        if (item < blocks.length && blocks[item] != null) {
            for (int b : blocks[item]) {
                pool.free(b);
            }
            blocks[item] = null;
            uploaded[item] = false;
            evictedNow = push(evictedNow, evictedCount++, item);
        }
    }

    private void grow(int item) {
        if (item >= blocks.length) {
            int n = Math.max(item + 1, blocks.length * 2);
            blocks = Arrays.copyOf(blocks, n);
            uploaded = Arrays.copyOf(uploaded, n);
        }
    }

    private static int[] push(int[] a, int i, int v) {
        if (i >= a.length) {
            a = Arrays.copyOf(a, a.length * 2);
        }
        a[i] = v;
        return a;
    }

    public int admittedCount() {
        return admittedCount;
    }

    /** The i-th item admitted by the last step or resize: upload its bytes. */
    public int admitted(int i) {
        return admittedNow[index(i, admittedCount)];
    }

    public int evictedCount() {
        return evictedCount;
    }

    /** The i-th item evicted by the last step or resize. */
    public int evicted(int i) {
        return evictedNow[index(i, evictedCount)];
    }

    /** Checks {@code i} against a per-step list of {@code count} items. */
    private static int index(int i, int count) {
        if (i < 0 || i >= count) {
            throw new IllegalArgumentException("i = " + i + "; allowed: 0.." + (count - 1));
        }
        return i;
    }

    /** Whether the item has blocks (admitted), uploaded or not. */
    public boolean admittedItem(int item) {
        return item >= 0 && item < blocks.length && blocks[item] != null;
    }

    /** Whether the item's bytes are in HBM: a hit. */
    public boolean resident(int item) {
        return admittedItem(item) && uploaded[item];
    }

    /** Blocks of an admitted item, in data order. */
    public int blockCount(int item) {
        return blocksOf(item).length;
    }

    /** The pool's id of the item's {@code i}-th block (for {@link BlockMajorPool#chunk} / offsets). */
    public int block(int item, int i) {
        int[] b = blocksOf(item);
        if (i < 0 || i >= b.length) {
            throw new IllegalArgumentException("i = " + i + "; allowed: 0.." + (b.length - 1));
        }
        return b[i];
    }

    private int[] blocksOf(int item) {
        if (!admittedItem(item)) {
            throw new IllegalArgumentException("item " + item + " is not in the HBM cache");
        }
        return blocks[item];
    }

    /**
     * Copies an admitted item's bytes ({@code src[srcOffset, srcOffset + itemBytes(item))}) into its
     * blocks; the item is resident from now on (later work on the copy stream sees the bytes).
     */
    public void upload(int item, MemorySegment src, long srcOffset) {
        long bytes = itemBytes.applyAsLong(item);
        int[] b = blocksOf(item);
        if (src == null || srcOffset < 0 || srcOffset > src.byteSize() || bytes > src.byteSize() - srcOffset) {
            throw new IndexOutOfBoundsException("src: item " + item + " needs " + bytes + " bytes at offset " + srcOffset
                    + "; the segment has " + (src == null ? 0 : src.byteSize()));
        }
        long done = 0;
        for (int k = 0; k < b.length && done < bytes; k++) {
            long len = Math.min(pool.blockBytes(), bytes - done);
            memory.upload(pool.chunk(b[k]), pool.offsetInChunk(b[k]), src, srcOffset + done, len);
            done += len;
        }
        uploaded[item] = true;
    }

    /** Copies a resident item's bytes back to the host (tests, spills); they are there on return. */
    public void download(int item, MemorySegment dst, long dstOffset) {
        if (!resident(item)) {
            throw new IllegalArgumentException("item " + item + " is not resident in the HBM cache");
        }
        long bytes = itemBytes.applyAsLong(item);
        if (dst == null || dstOffset < 0 || dstOffset > dst.byteSize() || bytes > dst.byteSize() - dstOffset) {
            throw new IndexOutOfBoundsException("dst: item " + item + " needs " + bytes + " bytes at offset " + dstOffset
                    + "; the segment has " + (dst == null ? 0 : dst.byteSize()));
        }
        int[] b = blocks[item];
        long done = 0;
        for (int k = 0; k < b.length && done < bytes; k++) {
            long len = Math.min(pool.blockBytes(), bytes - done);
            memory.download(dst, dstOffset + done, pool.chunk(b[k]), pool.offsetInChunk(b[k]), len);
            done += len;
        }
        memory.drain();
    }

    /**
     * Changes the budget at run time without moving a resident block. Shrinking evicts the
     * lowest-scoring items until the rest fit, then the items holding blocks in chunks beyond the
     * new limit (so device memory falls to the budget at once); {@link #evicted} lists them all.
     * Growing only raises the limits.
     */
    public void resize(long budgetBytes) {
        if (budgetBytes < 0) {
            throw new IllegalArgumentException("budgetBytes = " + budgetBytes + "; allowed: 0 or more");
        }
        admittedCount = 0;
        evictedCount = 0;
        pool.setBudget(budgetBytes);
        long policyBudget = pool.capacityBlocks() * pool.blockBytes();
        policy.resize(policyBudget);
        for (int i = 0; i < policy.evictedCount(); i++) {
            dropBlocks(policy.evicted(i));
        }
        if (pool.blocksInRetiringChunks() > 0) {
            for (int item = 0; item < blocks.length && pool.blocksInRetiringChunks() > 0; item++) {
                int[] b = blocks[item];
                if (b == null) {
                    continue;
                }
                boolean pinsRetiring = false;
                for (int x : b) {
                    pinsRetiring |= pool.inRetiringChunk(x);
                }
                if (pinsRetiring) {
                    policy.remove(item);
                    dropBlocks(item);
                }
            }
        }
    }

    public long budgetBytes() {
        return pool.budgetBytes();
    }

    /** Bytes the policy accounts as cached (whole blocks). */
    public long usedBytes() {
        return policy.usedBytes();
    }

    public long hits() {
        return policy.hits();
    }

    public long misses() {
        return policy.misses();
    }

    public BlockMajorPool<C> pool() {
        return pool;
    }

    /** Frees every chunk (after draining copies). */
    @Override
    public void close() {
        pool.close();
    }
}
