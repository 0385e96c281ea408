package io.kvoffload.internal.elastic;

import io.kvoffload.internal.util.Checks;
import java.util.ArrayList;
import java.util.List;

/**
 * The bookkeeping of SwiftCache's block-major elastic pool [SwiftCache §3.4, Fig. 6]: fixed-size
 * units (a {@link MinimumElasticUnit}) carved from chunks, under a budget that can change at run
 * time without moving a unit in use. A unit holds everything that belongs to it contiguously, so
 * capacity is added or removed a chunk at a time and no other unit is touched. It holds no memory:
 * a {@link Chunks} callback allocates and frees each chunk (host arenas for the DRAM tier, device
 * allocations for the GPU module).
 *
 * <p>Chunks are taken lazily, when a unit is needed and the budget has room for another chunk.
 * Shrinking lowers the chunk limit: fully free chunks are freed at once; chunks still holding units
 * beyond the limit are marked <em>retiring</em>, get no new units, and are freed when their last
 * unit is (the owner may also evict their units: {@link #unitsInRetiringChunks}). Growing raises the
 * limit and un-retires chunks first. Allocation prefers the fullest chunk with room, so sparse
 * chunks drain and a later shrink finds free chunks. With {@code keepFreeChunks} false a chunk is
 * also freed the moment its last unit is, so the memory held follows the units in use.
 *
 * <p>A unit id is {@code chunkSlot × unitsPerChunk + index}; ids stay valid until freed, and a unit in
 * use is never handed out again before it is freed. Free units are interchangeable (all have one
 * size), so the pool never fragments: any free unit serves any request. Not thread-safe: the owner
 * serialises calls.
 */
public final class BlockMajorAllocator {
    /** Allocates and frees the memory of chunks, by chunk slot. */
    public interface Chunks {
        /** Allocates chunk {@code slot} of {@code bytes}. */
        void allocate(int slot, long bytes);

        /** Frees chunk {@code slot}; no unit of it is in use any more. */
        void free(int slot);
    }

    private final MinimumElasticUnit unit;
    private final int unitsPerChunk;
    private final long chunkBytes;
    private final boolean keepFreeChunks;
    private final Chunks memory;
    private final List<Chunk> slots = new ArrayList<>(); // null: slot free (chunk freed)
    private long budgetBytes;
    private int chunkLimit;
    private int liveChunks;
    private int usedUnits;
    private boolean closed;

    private static final class Chunk {
        final int[] free; // stack of free unit indices
        final boolean[] used;
        int freeCount;
        boolean retiring;

        Chunk(int units) {
            this.free = new int[units];
            this.used = new boolean[units];
            for (int i = 0; i < units; i++) {
                free[i] = units - 1 - i; // pop gives 0 first: units fill a chunk front to back
            }
            this.freeCount = units;
        }
    }

    /**
     * @param unitsPerChunk units per chunk (1..2^20)
     * @param budgetBytes initial budget; at most {@code budget / chunkBytes} chunks stay in service
     * @param keepFreeChunks keep fully free chunks within the limit for reuse (else free them at once)
     */
    public BlockMajorAllocator(MinimumElasticUnit unit, int unitsPerChunk, long budgetBytes, boolean keepFreeChunks,
            Chunks memory) {
        this.unit = Checks.notNull("unit", unit);
        this.unitsPerChunk = Checks.inRange("unitsPerChunk", unitsPerChunk, 1, 1 << 20);
        if (unit.unitBytes() > Long.MAX_VALUE / unitsPerChunk) {
            throw new IllegalArgumentException("unitBytes × unitsPerChunk = " + unit.unitBytes() + " × " + unitsPerChunk
                    + " overflows; allowed: a chunk below 2^63 bytes");
        }
        this.chunkBytes = unit.unitBytes() * unitsPerChunk;
        this.keepFreeChunks = keepFreeChunks;
        this.memory = Checks.notNull("memory", memory);
        setBudget(budgetBytes);
    }

    public MinimumElasticUnit unit() {
        return unit;
    }

    public long unitBytes() {
        return unit.unitBytes();
    }

    public int unitsPerChunk() {
        return unitsPerChunk;
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

    public int usedUnits() {
        return usedUnits;
    }

    /** Free units in chunks in service (allocated, not retiring). */
    public long freeUnitsInService() {
        long n = 0;
        for (Chunk c : slots) {
            if (c != null && !c.retiring) {
                n += c.freeCount;
            }
        }
        return n;
    }

    /** Units the budget could hold once every retiring chunk has drained. */
    public long capacityUnits() {
        return (long) chunkLimit * unitsPerChunk;
    }

    /** Units that can be taken now without exceeding the budget. */
    public long availableUnits() {
        return freeUnitsInService() + (long) Math.max(0, chunkLimit - liveChunks) * unitsPerChunk;
    }

    /** Chunk slots (freed ones included): unit ids are below {@code slotCount() × unitsPerChunk}. */
    public int slotCount() {
        return slots.size();
    }

    /** Whether chunk slot {@code slot} holds a chunk now. */
    public boolean chunkLive(int slot) {
        return slot >= 0 && slot < slots.size() && slots.get(slot) != null;
    }

    /** Units in use in chunk slot {@code slot} (0 when it holds no chunk). */
    public int usedInChunk(int slot) {
        Chunk c = slot >= 0 && slot < slots.size() ? slots.get(slot) : null;
        return c == null ? 0 : unitsPerChunk - c.freeCount;
    }

    /** Chunks marked retiring: beyond the limit, still holding units. */
    public int retiringCount() {
        int n = 0;
        for (Chunk c : slots) {
            if (c != null && c.retiring) {
                n++;
            }
        }
        return n;
    }

    private int inService() {
        int n = 0;
        for (Chunk c : slots) {
            if (c != null && !c.retiring) {
                n++;
            }
        }
        return n;
    }

    /**
     * Takes a free unit, allocating a chunk when none has room and the budget allows one.
     *
     * @return the unit id, or -1 when the budget is exhausted
     */
    public int allocate() {
        ensureOpen();
        int best = -1;
        for (int s = 0; s < slots.size(); s++) {
            Chunk c = slots.get(s);
            if (c != null && !c.retiring && c.freeCount > 0 && (best < 0 || c.freeCount < slots.get(best).freeCount)) {
                best = s;
            }
        }
        if (best < 0) {
            if (liveChunks >= chunkLimit) {
                return -1; // retiring chunks count too: allocated memory never exceeds the budget by a new chunk
            }
            best = addChunk();
        }
        Chunk c = slots.get(best);
        int index = c.free[--c.freeCount];
        c.used[index] = true;
        usedUnits++;
        return best * unitsPerChunk + index;
    }

    private int addChunk() {
        int slot = -1;
        for (int s = 0; s < slots.size(); s++) {
            if (slots.get(s) == null) {
                slot = s;
                break;
            }
        }
        if (slot < 0) {
            slots.add(null);
            slot = slots.size() - 1;
        }
        memory.allocate(slot, chunkBytes); // may throw: nothing changed yet
        slots.set(slot, new Chunk(unitsPerChunk));
        liveChunks++;
        return slot;
    }

    /** Whether {@code unit} is a unit id handed out and not yet freed. */
    public boolean inUse(int unit) {
        int s = unit < 0 ? -1 : unit / unitsPerChunk;
        Chunk c = s >= 0 && s < slots.size() ? slots.get(s) : null;
        return c != null && c.used[unit % unitsPerChunk];
    }

    /**
     * Returns a unit. Freeing the last unit of a retiring chunk frees the chunk (and of any chunk when
     * free chunks are not kept).
     *
     * @throws IllegalArgumentException for an id that is not a unit in use (freed twice, or never taken)
     */
    public void free(int unit) {
        ensureOpen();
        Chunk c = chunkOf(unit);
        int index = unit % unitsPerChunk;
        if (!c.used[index]) {
            throw new IllegalStateException("unit " + unit + " freed twice (it is not in use)");
        }
        c.used[index] = false;
        c.free[c.freeCount++] = index;
        usedUnits--;
        if (c.freeCount == unitsPerChunk && (c.retiring || !keepFreeChunks)) {
            release(unit / unitsPerChunk);
        }
    }

    /** Chunk slot of {@code unit}. */
    public int chunkSlot(int unit) {
        chunkOf(unit);
        return unit / unitsPerChunk;
    }

    /** Byte offset of {@code unit} inside its chunk. */
    public long offsetInChunk(int unit) {
        chunkOf(unit);
        return (unit % unitsPerChunk) * this.unit.unitBytes();
    }

    /** Whether {@code unit} sits in a retiring chunk (it keeps a shrink from taking effect). */
    public boolean inRetiringChunk(int unit) {
        return chunkOf(unit).retiring;
    }

    /** Units now in use inside retiring chunks. */
    public int unitsInRetiringChunks() {
        int n = 0;
        for (Chunk c : slots) {
            if (c != null && c.retiring) {
                n += unitsPerChunk - c.freeCount;
            }
        }
        return n;
    }

    private Chunk chunkOf(int unit) {
        int s = unit < 0 ? -1 : unit / unitsPerChunk;
        Chunk c = s >= 0 && s < slots.size() ? slots.get(s) : null;
        if (c == null) {
            throw new IllegalArgumentException("unit = " + unit + " is not a unit of this pool; allowed: ids returned"
                    + " by allocate() and not yet freed (0.." + ((long) slots.size() * unitsPerChunk - 1) + ")");
        }
        return c;
    }

    /**
     * Changes the budget. Never moves a unit: growing raises the chunk limit (retiring chunks come
     * back into service first); shrinking frees fully free chunks and marks the emptiest chunks with
     * units in use as retiring until at most {@link #chunkLimit()} chunks stay in service.
     */
    public void setBudget(long budgetBytes) {
        Checks.inRange("budgetBytes", budgetBytes, 0, Long.MAX_VALUE);
        this.budgetBytes = budgetBytes;
        this.chunkLimit = (int) Math.min(Integer.MAX_VALUE - 8, budgetBytes / chunkBytes);
        if (closed) {
            return;
        }
        // Free chunks go first: they cost nothing to drop.
        for (int s = 0; s < slots.size() && liveChunks > chunkLimit; s++) {
            Chunk c = slots.get(s);
            if (c != null && c.freeCount == unitsPerChunk) {
                release(s);
            }
        }
        int inService = inService();
        // Retire the emptiest chunks still in service until the rest fit the limit.
        while (inService > chunkLimit) {
            int pick = -1;
            for (int s = 0; s < slots.size(); s++) {
                Chunk c = slots.get(s);
                if (c != null && !c.retiring && (pick < 0 || c.freeCount > slots.get(pick).freeCount)) {
                    pick = s;
                }
            }
            slots.get(pick).retiring = true;
            inService--;
        }
        // Un-retire (fullest first) while the limit has room: their units never moved.
        while (inService < chunkLimit) {
            int pick = -1;
            for (int s = 0; s < slots.size(); s++) {
                Chunk c = slots.get(s);
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
    }

    private void release(int slot) {
        slots.set(slot, null);
        liveChunks--;
        memory.free(slot);
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("elastic pool is closed");
        }
    }

    /** Frees every chunk (the owner has drained whatever may still touch them). */
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (int s = 0; s < slots.size(); s++) {
            if (slots.get(s) != null) {
                slots.set(s, null);
                memory.free(s);
            }
        }
        liveChunks = 0;
        usedUnits = 0;
    }

    public boolean isClosed() {
        return closed;
    }

    @Override
    public String toString() {
        return "BlockMajorAllocator{unit=" + unit.unitBytes() + " B, " + unitsPerChunk + " per chunk, budget="
                + budgetBytes + ", chunks=" + liveChunks + "/" + chunkLimit + ", used=" + usedUnits + "}";
    }
}
