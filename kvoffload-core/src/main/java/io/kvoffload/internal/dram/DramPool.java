package io.kvoffload.internal.dram;

import io.kvoffload.KvDramExhaustedException;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.spi.DramSlabListener;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The DRAM tier: off-heap slabs carved into fixed-size slots, under a hard byte budget.
 *
 * <p>Slabs come from shared arenas (any thread may use a slot) through {@link SlabMemory} (fresh
 * mappings, huge pages where the kernel gives them), are 4096-aligned so any slot can be
 * the target of an O_DIRECT transfer, and are announced to {@link DramSlabListener}s (io_uring
 * fixed-buffer registration, CUDA page-locking) when allocated and before they are freed. Each
 * slot size (a multiple of 4096) has its own slabs; a slab is allocated when its class runs out
 * and the budget allows, and kept until the pool closes, so registered memory never moves. The
 * elastic pool's chunks (decoders' caches and windows, {@code internal.elastic}) count against the
 * same budget through {@link #reserve}/{@link #unreserve}; they are freed as they empty.
 */
public final class DramPool implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DramPool.class);
    public static final int ALIGNMENT = 4096;

    private final long budgetBytes;
    private final long slabBytes;
    private final boolean hugePages;
    private final List<DramSlabListener> listeners = new CopyOnWriteArrayList<>();
    private final List<SizeClass> classes = new ArrayList<>();
    private final List<Slab> slabs = new ArrayList<>();
    private long reservedBytes;
    private long slotsInUseBytes;
    private boolean closed;

    static final class SizeClass {
        final long slotBytes;
        final ArrayDeque<DramSlot> free = new ArrayDeque<>();

        SizeClass(long slotBytes) {
            this.slotBytes = slotBytes;
        }
    }

    private record Slab(int id, Arena arena, MemorySegment segment) {}

    /**
     * @param budgetBytes hard limit on slab memory
     * @param slabBytes size of one slab (a multiple of 4096); slots larger than this get a slab of
     *     their own
     */
    public DramPool(long budgetBytes, long slabBytes) {
        this(budgetBytes, slabBytes, true);
    }

    /**
     * @param budgetBytes hard limit on slab memory
     * @param slabBytes size of one slab (a multiple of 4096); slots larger than this get a slab of
     *     their own
     * @param hugePages slabs (and the elastic pool's chunks) are anonymous mappings advised for
     *     transparent huge pages ({@link SlabMemory}); false: the JDK's allocator
     */
    public DramPool(long budgetBytes, long slabBytes, boolean hugePages) {
        this.hugePages = hugePages;
        this.budgetBytes = Checks.positive("dramBudgetBytes", budgetBytes);
        Checks.positive("slabBytes", slabBytes);
        if (slabBytes % ALIGNMENT != 0) {
            throw new IllegalArgumentException("slabBytes = " + slabBytes + " must be a multiple of " + ALIGNMENT);
        }
        this.slabBytes = slabBytes;
    }

    /** Whether slabs and elastic chunks ask for transparent huge pages ({@link SlabMemory}). */
    public boolean hugePages() {
        return hugePages;
    }

    /** Registers a listener; it is told about every slab already allocated, then about new ones. */
    public synchronized void addListener(DramSlabListener listener) {
        listeners.add(listener);
        for (Slab s : slabs) {
            listener.slabAllocated(s.id, s.segment);
        }
    }

    public long budgetBytes() {
        return budgetBytes;
    }

    /** Bytes of slabs allocated so far, plus bytes {@link #reserve reserved} by the elastic pool (never above the budget). */
    public synchronized long reservedBytes() {
        return reservedBytes;
    }

    /** Bytes of slots currently handed out. */
    public synchronized long inUseBytes() {
        return slotsInUseBytes;
    }

    /** Slot size that a request for {@code bytes} gets: {@code bytes} rounded up to 4096. */
    public static long slotSizeFor(long bytes) {
        return Checks.alignUp(bytes, ALIGNMENT);
    }

    /**
     * Takes a slot of at least {@code bytes} bytes (rounded up to 4096).
     *
     * @throws KvDramExhaustedException when no slot is free and the budget allows no new slab
     */
    public synchronized DramSlot acquire(long bytes) {
        ensureOpen();
        Checks.positive("bytes", bytes);
        SizeClass c = classFor(slotSizeFor(bytes));
        DramSlot slot = c.free.pollFirst();
        if (slot == null) {
            grow(c);
            slot = c.free.pollFirst();
        }
        slot.inUse = true;
        slotsInUseBytes += c.slotBytes;
        return slot;
    }

    /** Takes a slot if one is free or the budget allows a new slab; null otherwise. */
    public synchronized DramSlot tryAcquire(long bytes) {
        ensureOpen();
        SizeClass c = classFor(slotSizeFor(bytes));
        if (c.free.isEmpty() && reservedBytes + slabBytesFor(c) > budgetBytes) {
            return null;
        }
        return acquire(bytes);
    }

    /** Returns a slot to its class. Releasing a slot twice is a bug and throws. */
    public synchronized void release(DramSlot slot) {
        if (slot == null) {
            return;
        }
        if (!slot.inUse) {
            throw new IllegalStateException("DRAM slot released twice");
        }
        slot.inUse = false;
        slotsInUseBytes -= slot.sizeClass.slotBytes;
        if (!closed) {
            slot.sizeClass.free.addFirst(slot);
        }
    }

    /**
     * Counts {@code bytes} of memory that another allocator of the DRAM tier (the elastic pool's
     * chunks) takes, against the same budget as the slabs.
     *
     * @throws KvDramExhaustedException when the budget has no room for them
     */
    public synchronized void reserve(long bytes) {
        ensureOpen();
        Checks.positive("bytes", bytes);
        if (reservedBytes + bytes > budgetBytes) {
            throw new KvDramExhaustedException("DRAM budget exhausted: " + budgetBytes + " bytes, " + reservedBytes
                    + " reserved (" + slabs.size() + " slabs and the elastic pool's chunks); " + bytes
                    + " more bytes do not fit. Raise dramBudgetBytes, or shrink decoders' caches");
        }
        reservedBytes += bytes;
    }

    /** Gives back bytes counted by {@link #reserve} (their memory has been freed). */
    public synchronized void unreserve(long bytes) {
        if (closed) {
            return; // close() has zeroed the accounting
        }
        Checks.inRange("bytes", bytes, 0, reservedBytes);
        reservedBytes -= bytes;
    }

    private SizeClass classFor(long slotBytes) {
        for (int i = 0; i < classes.size(); i++) {
            SizeClass c = classes.get(i);
            if (c.slotBytes == slotBytes) {
                return c;
            }
        }
        SizeClass c = new SizeClass(slotBytes);
        classes.add(c);
        return c;
    }

    private long slabBytesFor(SizeClass c) {
        return c.slotBytes >= slabBytes ? c.slotBytes : slabBytes - slabBytes % c.slotBytes;
    }

    private void grow(SizeClass c) {
        long bytes = slabBytesFor(c);
        if (reservedBytes + bytes > budgetBytes) {
            throw new KvDramExhaustedException("DRAM budget exhausted: " + budgetBytes + " bytes, "
                    + reservedBytes + " reserved in " + slabs.size() + " slabs, " + slotsInUseBytes
                    + " bytes of slots in use; a slot of " + c.slotBytes + " bytes needs a new slab of " + bytes
                    + " bytes. Raise dramBudgetBytes, or read fewer positions or layers at once");
        }
        Arena arena = Arena.ofShared();
        MemorySegment seg = SlabMemory.allocate(arena, bytes, hugePages);
        int id = slabs.size();
        slabs.add(new Slab(id, arena, seg));
        reservedBytes += bytes;
        for (long off = 0; off + c.slotBytes <= bytes; off += c.slotBytes) {
            c.free.addLast(new DramSlot(c, id, seg.asSlice(off, c.slotBytes)));
        }
        for (DramSlabListener l : listeners) {
            l.slabAllocated(id, seg);
        }
        LOG.debug("DRAM slab {} of {} bytes for {}-byte slots; {} of {} bytes reserved", id, bytes, c.slotBytes,
                reservedBytes, budgetBytes);
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("DRAM pool is closed");
        }
    }

    /**
     * Frees every slab. The caller must have drained all I/O that targets the slots; listeners are
     * told before each slab's memory is released.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (int i = slabs.size() - 1; i >= 0; i--) {
            Slab s = slabs.get(i);
            for (DramSlabListener l : listeners) {
                try {
                    l.slabFreed(s.id, s.segment);
                } catch (RuntimeException e) {
                    LOG.warn("DRAM slab listener {} failed on slab {}", l, s.id, e);
                }
            }
            s.arena.close();
        }
        slabs.clear();
        classes.clear();
        reservedBytes = 0;
    }
}
