package io.kvoffload.internal.elastic;

import io.kvoffload.KvDramExhaustedException;
import io.kvoffload.internal.dram.DramPool;
import io.kvoffload.internal.util.Checks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The DRAM tier's elastic pool [SwiftCache §3.4]: block-major units, sized by the
 * {@link MinimumElasticUnit} of the entry sizes its consumers store, from which every decoder's
 * elastic consumers (a layer's hot cache, a layer's reuse buffer) take the DRAM they hold. A
 * consumer's budget is just the units it holds, so moving budget between consumers (or decoders)
 * is one consumer giving units back and another taking them: no live byte is copied, and since all
 * units have one size, any free unit serves any consumer (no fragmentation).
 *
 * <p>Memory follows the units in use: a chunk (a few MiB of units, one shared {@link Arena}) is
 * allocated when a unit is needed and freed — its arena closed, the bytes handed back to the
 * allocator and the OS — the moment its last unit is given back. Chunks count against the
 * {@link DramPool}'s budget ({@link DramPool#reserve}); on top of that the pool has a budget of its
 * own ({@link #setBudget}), the engine-wide cap on elastic DRAM.
 *
 * <p>Consumers copy bytes into units; no I/O targets them, so chunks are not announced to
 * {@link io.kvoffload.spi.DramSlabListener}s (no fixed-buffer churn when budgets move).
 *
 * <p>Thread-safe: decoders on different threads take and give units; each holds the lock only for
 * the bookkeeping. A consumer caches its units' segments ({@link #segment}) so a decoding step
 * takes no lock.
 */
public final class ElasticDramPool implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ElasticDramPool.class);
    /** Units are whole pages: a freed chunk hands back whole pages. */
    public static final long PAGE = DramPool.ALIGNMENT;

    private final DramPool dram;
    private final long chunkTargetBytes;
    private final List<Arena> arenas = new ArrayList<>();
    private final List<MemorySegment> chunks = new ArrayList<>();
    private BlockMajorAllocator units;
    private long budgetBytes;
    private long chunksAllocated;
    private long chunksFreed;

    /**
     * @param dram the DRAM tier whose budget the chunks count against
     * @param budgetBytes the pool's own cap on elastic DRAM
     * @param chunkBytes about how much memory one chunk holds (a whole number of units, at least one)
     */
    public ElasticDramPool(DramPool dram, long budgetBytes, long chunkBytes) {
        this.dram = Checks.notNull("dram", dram);
        this.budgetBytes = Checks.inRange("budgetBytes", budgetBytes, 0, Long.MAX_VALUE);
        this.chunkTargetBytes = Checks.positive("chunkBytes", chunkBytes);
        this.units = allocator(MinimumElasticUnit.of(PAGE));
    }

    private BlockMajorAllocator allocator(MinimumElasticUnit unit) {
        return new BlockMajorAllocator(unit, unit.unitsPerChunk(chunkTargetBytes), budgetBytes, false,
                new BlockMajorAllocator.Chunks() {
                    @Override
                    public void allocate(int slot, long bytes) {
                        allocateChunk(slot, bytes);
                    }

                    @Override
                    public void free(int slot) {
                        freeChunk(slot);
                    }
                });
    }

    private void allocateChunk(int slot, long bytes) {
        dram.reserve(bytes); // throws KvDramExhaustedException when the DRAM tier has no room
        Arena arena = Arena.ofShared();
        MemorySegment seg;
        try {
            seg = arena.allocate(bytes, PAGE);
        } catch (RuntimeException | OutOfMemoryError e) {
            arena.close();
            dram.unreserve(bytes);
            throw e;
        }
        while (arenas.size() <= slot) {
            arenas.add(null);
            chunks.add(null);
        }
        arenas.set(slot, arena);
        chunks.set(slot, seg);
        chunksAllocated++;
        LOG.debug("elastic chunk {} of {} bytes; {} bytes of chunks", slot, bytes, units == null ? bytes
                : units.allocatedBytes() + bytes);
    }

    private void freeChunk(int slot) {
        Arena arena = arenas.set(slot, null);
        MemorySegment seg = chunks.set(slot, null);
        arena.close();
        dram.unreserve(seg.byteSize());
        chunksFreed++;
        LOG.debug("elastic chunk {} freed ({} bytes)", slot, seg.byteSize());
    }

    /**
     * Makes the unit a multiple of {@code entryBytes} too, when no unit is in use (the unit cannot
     * change under live units). Returns the unit in effect.
     */
    public synchronized MinimumElasticUnit register(long entryBytes) {
        Checks.positive("entryBytes", entryBytes);
        MinimumElasticUnit now = units.unit();
        if (now.unitBytes() % entryBytes == 0) {
            return now;
        }
        MinimumElasticUnit wider = now.with(entryBytes);
        if (units.usedUnits() == 0) {
            units.close();
            units = allocator(wider);
            LOG.debug("elastic unit widened to {} bytes for entries of {} bytes", wider.unitBytes(), entryBytes);
            return wider;
        }
        if (entryBytes > now.unitBytes()) {
            throw new IllegalStateException("entries of " + entryBytes + " bytes do not fit the elastic unit of "
                    + now.unitBytes() + " bytes that " + units.usedUnits() + " live units use; allowed: entries of"
                    + " at most the unit (open decoders of this shape before others, or close the others first)");
        }
        LOG.debug("entries of {} bytes do not divide the elastic unit of {} bytes; {} bytes of each unit stay unused",
                entryBytes, now.unitBytes(), now.unitBytes() % entryBytes);
        return now;
    }

    /** Bytes of one unit. */
    public synchronized long unitBytes() {
        return units.unitBytes();
    }

    /** Entries of {@code entryBytes} one unit holds (at least 1; see {@link #register}). */
    public synchronized int entriesPerUnit(long entryBytes) {
        Checks.positive("entryBytes", entryBytes);
        long per = units.unitBytes() / entryBytes;
        if (per < 1) {
            throw new IllegalStateException("entries of " + entryBytes + " bytes exceed the elastic unit of "
                    + units.unitBytes() + " bytes; register the size first");
        }
        return (int) Math.min(Integer.MAX_VALUE - 8, per);
    }

    /**
     * Takes {@code n} units into {@code ids[0 .. n)} and their segments into {@code segments[0 .. n)},
     * all or none.
     *
     * @throws KvDramExhaustedException when the pool's budget or the DRAM tier has no room for them
     *     (nothing is taken)
     */
    public synchronized void take(int n, int[] ids, MemorySegment[] segments) {
        ensureOpen();
        Checks.capacity("ids", ids.length, n);
        Checks.capacity("segments", segments.length, n);
        int got = 0;
        try {
            for (; got < n; got++) {
                int u = units.allocate();
                if (u < 0) {
                    throw new KvDramExhaustedException("the elastic DRAM pool's budget of " + budgetBytes + " bytes is"
                            + " exhausted: " + units.usedUnits() + " units of " + units.unitBytes() + " bytes in use, "
                            + n + " more asked for. Raise it (KvEngine.setElasticDramBytes) or shrink other"
                            + " decoders' caches (KvDecoder.setCacheBytes)");
                }
                ids[got] = u;
                segments[got] = chunks.get(units.chunkSlot(u)).asSlice(units.offsetInChunk(u), units.unitBytes());
            }
        } catch (RuntimeException e) {
            for (int i = 0; i < got; i++) {
                units.free(ids[i]);
                segments[i] = null;
            }
            throw e;
        }
    }

    /** Gives back units taken by {@link #take}; a chunk whose last unit this was is freed. */
    public synchronized void give(int[] ids, int n) {
        if (units.isClosed()) {
            return; // the pool closed first: its chunks are gone already
        }
        for (int i = 0; i < n; i++) {
            units.free(ids[i]);
        }
    }

    /** Whether {@code unit} is in use now (taken and not given back). */
    public synchronized boolean inUse(int unit) {
        return units.inUse(unit);
    }

    /**
     * Changes the engine-wide cap on elastic DRAM.
     *
     * @throws IllegalArgumentException when {@code bytes} is below what decoders hold now: it never
     *     takes a unit away from a live consumer (shrink the decoders' caches first)
     */
    public synchronized void setBudget(long bytes) {
        Checks.inRange("bytes", bytes, 0, Long.MAX_VALUE);
        long held = units.allocatedBytes();
        if (bytes < held) {
            throw new IllegalArgumentException("elastic DRAM budget = " + bytes + " is below the " + held
                    + " bytes of chunks decoders' caches hold now; allowed: at least " + held
                    + " (shrink decoders first with KvDecoder.setCacheBytes)");
        }
        budgetBytes = bytes;
        units.setBudget(bytes);
    }

    public synchronized long budgetBytes() {
        return budgetBytes;
    }

    /** Bytes of chunks allocated now: the memory the pool holds. */
    public synchronized long reservedBytes() {
        return units.allocatedBytes();
    }

    /** Bytes of units in use. */
    public synchronized long usedBytes() {
        return (long) units.usedUnits() * units.unitBytes();
    }

    public synchronized int usedUnits() {
        return units.usedUnits();
    }

    public synchronized int chunkCount() {
        return units.chunkCount();
    }

    /** Chunks allocated and freed since creation. */
    public synchronized long chunksAllocated() {
        return chunksAllocated;
    }

    public synchronized long chunksFreed() {
        return chunksFreed;
    }

    private void ensureOpen() {
        if (units.isClosed()) {
            throw new IllegalStateException("the elastic DRAM pool is closed");
        }
    }

    /** Frees every chunk; consumers must not touch their units any more. */
    @Override
    public synchronized void close() {
        units.close();
    }

    @Override
    public synchronized String toString() {
        return "ElasticDramPool{" + units + "}";
    }
}
