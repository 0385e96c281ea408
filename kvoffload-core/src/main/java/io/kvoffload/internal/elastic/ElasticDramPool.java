package io.kvoffload.internal.elastic;

import io.kvoffload.KvDramExhaustedException;
import io.kvoffload.internal.dram.DramPool;
import io.kvoffload.internal.dram.SlabMemory;
import io.kvoffload.internal.ffi.Libc;
import io.kvoffload.internal.util.Checks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The DRAM tier's elastic pool [SwiftCache §3.4]: block-major units, sized by the
 * {@link MinimumElasticUnit} of the entry sizes its consumers store, from which every decoder's
 * consumers (a layer's hot cache, its reuse buffer, its window) take the DRAM they hold. The caches
 * are bounded by the pool's cap; a window takes the units its tokens need (only the DRAM budget
 * bounds it), from chunks of their own (a window's few long-lived units would otherwise pin chunks a
 * shrinking cache hands back), under the same DRAM budget, so budget a cache gives back serves a
 * growing window too. A
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
 * <p>One unit serves all consumers whose entry sizes it is a multiple of; while no unit is in use a
 * new consumer's size widens the unit to the LCM (for consumers from then on). A consumer whose
 * entries do not fit the units in use gets a size class of its own ({@code lcm(4096, entryBytes)}),
 * under the same budget, so mixing shapes never fails; each class is block-major and returns its
 * chunks as they empty.
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
    /**
     * Unit size classes: the caches' by unit bytes, the windows' (uncapped) by minus unit bytes.
     * Windows live long and hold few units, caches grow and shrink: separate chunks keep a window's
     * unit from pinning a chunk a shrinking cache would otherwise hand back.
     */
    private final Map<Long, UnitClass> classes = new TreeMap<>();
    private long budgetBytes;
    private long reservedBytes;
    private long chunksAllocated;
    private long chunksFreed;
    private boolean closed;
    /** Set while a take that the cap does not bound (a window's tokens) allocates chunks. */
    private boolean uncapped;

    /** The units of one size: a block-major allocator and its chunks' memory. */
    private final class UnitClass implements BlockMajorAllocator.Chunks {
        final BlockMajorAllocator units;
        final List<Arena> arenas = new ArrayList<>();
        final List<MemorySegment> chunks = new ArrayList<>();
        /** Per chunk, its units' slices, made once so taking a unit allocates nothing. */
        final List<MemorySegment[]> unitSegments = new ArrayList<>();

        UnitClass(MinimumElasticUnit unit) {
            this.units = new BlockMajorAllocator(unit, unit.unitsPerChunk(chunkTargetBytes), Long.MAX_VALUE, false, this);
        }

        @Override
        public void allocate(int slot, long bytes) {
            if (!uncapped && reservedBytes + bytes > budgetBytes) {
                throw new KvDramExhaustedException("the elastic DRAM pool's budget of " + budgetBytes + " bytes is"
                        + " exhausted: " + reservedBytes + " bytes of chunks held, a chunk of " + bytes + " more needed."
                        + " Raise it (KvEngine.setElasticDramBytes) or shrink other decoders' caches"
                        + " (KvDecoder.setCacheBytes)");
            }
            dram.reserve(bytes); // throws KvDramExhaustedException when the DRAM tier has no room
            Arena arena = Arena.ofShared();
            MemorySegment seg;
            try {
                seg = SlabMemory.allocate(arena, bytes, dram.hugePages());
            } catch (RuntimeException | OutOfMemoryError e) {
                arena.close();
                dram.unreserve(bytes);
                throw e;
            }
            while (arenas.size() <= slot) {
                arenas.add(null);
                chunks.add(null);
                unitSegments.add(null);
            }
            long unit = bytes / units.unitsPerChunk();
            MemorySegment[] slices = new MemorySegment[units.unitsPerChunk()];
            for (int i = 0; i < slices.length; i++) {
                slices[i] = seg.asSlice(i * unit, unit);
            }
            arenas.set(slot, arena);
            chunks.set(slot, seg);
            unitSegments.set(slot, slices);
            reservedBytes += bytes;
            chunksAllocated++;
            LOG.debug("elastic chunk {} of {} bytes ({}-byte units); {} bytes of chunks", slot, bytes,
                    units == null ? bytes : units.unitBytes(), reservedBytes);
        }

        @Override
        public void free(int slot) {
            Arena arena = arenas.set(slot, null);
            MemorySegment seg = chunks.set(slot, null);
            unitSegments.set(slot, null);
            arena.close(); // the bytes go back to the allocator (and, for large chunks, the OS)
            dram.unreserve(seg.byteSize());
            reservedBytes -= seg.byteSize();
            chunksFreed++;
            LOG.debug("elastic chunk {} freed ({} bytes)", slot, seg.byteSize());
        }

        MemorySegment segment(int unit) {
            return unitSegments.get(units.chunkSlot(unit))[unit % units.unitsPerChunk()];
        }
    }

    /**
     * @param dram the DRAM tier whose budget the chunks count against
     * @param budgetBytes the pool's own cap on elastic DRAM
     * @param chunkBytes about how much memory one chunk holds (a whole number of units, at least one)
     */
    public ElasticDramPool(DramPool dram, long budgetBytes, long chunkBytes) {
        this.dram = Checks.notNull("dram", dram);
        this.budgetBytes = Checks.inRange("budgetBytes", budgetBytes, 0, Long.MAX_VALUE);
        this.chunkTargetBytes = Checks.positive("chunkBytes", chunkBytes);
    }

    /**
     * The unit that entries of {@code entryBytes} are stored in: the smallest unit in use that is a
     * multiple of it; else, while no unit is in use, a new unit that is the LCM of every unit so far
     * and this size (SwiftCache's shared unit: consumers registered from now on share it); else a
     * size class of its own, {@code lcm(4096, entryBytes)}. A unit once handed out stays valid (a
     * consumer holding none may take some later), so older classes are kept; they hold no chunk
     * while empty.
     */
    public synchronized MinimumElasticUnit register(long entryBytes) {
        ensureOpen();
        Checks.positive("entryBytes", entryBytes);
        for (UnitClass c : classes.values()) {
            if (c.units.unitBytes() % entryBytes == 0) {
                return c.units.unit();
            }
        }
        MinimumElasticUnit unit = MinimumElasticUnit.of(PAGE, entryBytes);
        if (usedUnitsAll() == 0) {
            try {
                MinimumElasticUnit shared = unit;
                for (UnitClass c : classes.values()) {
                    shared = shared.with(c.units.unitBytes());
                }
                unit = shared;
            } catch (IllegalArgumentException tooLarge) {
                LOG.debug("entries of {} bytes get a unit of their own: {}", entryBytes, tooLarge.getMessage());
            }
        }
        UnitClass c = classes.get(unit.unitBytes());
        if (c == null) {
            c = new UnitClass(unit);
            classes.put(unit.unitBytes(), c);
        }
        LOG.debug("elastic unit of {} bytes for entries of {} bytes ({} unit classes)", unit.unitBytes(), entryBytes,
                classes.size());
        return unit;
    }

    private UnitClass classOf(long unitBytes, boolean capped) {
        UnitClass c = classes.get(capped ? unitBytes : -unitBytes);
        if (c == null) {
            UnitClass registered = classes.get(unitBytes);
            if (registered == null) {
                throw new IllegalArgumentException("unitBytes = " + unitBytes + " is not a unit of this pool; allowed: "
                        + classes.keySet() + " (register the entry size first)");
            }
            c = new UnitClass(registered.units.unit());
            classes.put(-unitBytes, c);
        }
        return c;
    }

    private int usedUnitsAll() {
        int n = 0;
        for (UnitClass c : classes.values()) {
            n += c.units.usedUnits();
        }
        return n;
    }

    /**
     * Takes {@code n} units of {@code unitBytes} into {@code ids[0 .. n)} and their segments into
     * {@code segments[0 .. n)}, all or none.
     *
     * @throws KvDramExhaustedException when the pool's budget or the DRAM tier has no room for them
     *     (nothing is taken)
     */
    public synchronized void take(long unitBytes, int n, int[] ids, MemorySegment[] segments) {
        take(unitBytes, n, ids, segments, true);
    }

    /**
     * As {@link #take(long, int, int[], MemorySegment[])}; with {@code capped} false the pool's own
     * budget does not apply (memory that must be held, a window's tokens), only the DRAM tier's.
     */
    public synchronized void take(long unitBytes, int n, int[] ids, MemorySegment[] segments, boolean capped) {
        ensureOpen();
        uncapped = !capped;
        try {
            takeUnits(classOf(unitBytes, capped), n, ids, segments);
        } finally {
            uncapped = false;
        }
    }

    private void takeUnits(UnitClass c, int n, int[] ids, MemorySegment[] segments) {
        Checks.capacity("ids", ids.length, n);
        Checks.capacity("segments", segments.length, n);
        int got = 0;
        try {
            for (; got < n; got++) {
                int u = c.units.allocate(); // unlimited per class: the budget is checked per chunk, over all classes
                ids[got] = u;
                segments[got] = c.segment(u);
            }
        } catch (RuntimeException e) {
            for (int i = 0; i < got; i++) {
                c.units.free(ids[i]);
                segments[i] = null;
            }
            throw e;
        }
    }

    /** Gives back cache units taken by {@link #take}; a chunk whose last unit this was is freed. */
    public synchronized void give(long unitBytes, int[] ids, int n) {
        give(unitBytes, ids, n, true);
    }

    /** Gives back units taken with the same {@code capped}; a chunk whose last unit this was is freed. */
    public synchronized void give(long unitBytes, int[] ids, int n, boolean capped) {
        if (closed) {
            return; // the pool closed first: its chunks are gone already
        }
        UnitClass c = classOf(unitBytes, capped);
        long freedBefore = chunksFreed;
        for (int i = 0; i < n; i++) {
            c.units.free(ids[i]);
        }
        if (chunksFreed != freedBefore) {
            Libc.mallocTrim(); // malloc'ed chunks' pages leave the process too (mapped ones were unmapped)
        }
    }

    /** Whether unit {@code unit} of {@code unitBytes} is in use now (taken and not given back). */
    public synchronized boolean inUse(long unitBytes, int unit) {
        UnitClass c = classes.get(unitBytes);
        return c != null && c.units.inUse(unit);
    }

    /**
     * Changes the engine-wide cap on elastic DRAM.
     *
     * @throws IllegalArgumentException when {@code bytes} is below the chunks decoders hold now: it
     *     never takes a unit away from a live consumer (shrink the decoders' caches first)
     */
    public synchronized void setBudget(long bytes) {
        Checks.inRange("bytes", bytes, 0, Long.MAX_VALUE);
        if (bytes < reservedBytes) {
            throw new IllegalArgumentException("elastic DRAM budget = " + bytes + " is below the " + reservedBytes
                    + " bytes of chunks decoders' caches and windows hold now; allowed: at least " + reservedBytes
                    + " (shrink decoders' caches first with KvDecoder.setCacheBytes)");
        }
        budgetBytes = bytes;
    }

    public synchronized long budgetBytes() {
        return budgetBytes;
    }

    /** Bytes of chunks allocated now: the memory the pool holds. */
    public synchronized long reservedBytes() {
        return reservedBytes;
    }

    /** Bytes of units in use. */
    public synchronized long usedBytes() {
        long n = 0;
        for (UnitClass c : classes.values()) {
            n += (long) c.units.usedUnits() * c.units.unitBytes();
        }
        return n;
    }

    public synchronized int usedUnits() {
        return usedUnitsAll();
    }

    public synchronized int chunkCount() {
        int n = 0;
        for (UnitClass c : classes.values()) {
            n += c.units.chunkCount();
        }
        return n;
    }

    /** Chunks allocated and freed since creation. */
    public synchronized long chunksAllocated() {
        return chunksAllocated;
    }

    public synchronized long chunksFreed() {
        return chunksFreed;
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("the elastic DRAM pool is closed");
        }
    }

    /** Frees every chunk; consumers must not touch their units any more. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (UnitClass c : classes.values()) {
            c.units.close();
        }
        classes.clear();
    }

    @Override
    public synchronized String toString() {
        return "ElasticDramPool{budget=" + budgetBytes + ", reserved=" + reservedBytes + ", classes="
                + classes.values().stream().map(c -> c.units.toString()).toList() + "}";
    }
}
