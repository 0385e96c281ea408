package io.kvoffload.internal.elastic;

import io.kvoffload.internal.util.Checks;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * One consumer's share of an {@link ElasticDramPool}: the units it holds, each cut into
 * {@link #perUnit()} entry slots. Slot {@code s} lives in the consumer's unit {@code s / perUnit} at
 * byte {@code (s % perUnit) × entryBytes}, and keeps that place for as long as its unit is held:
 * growing fills holes first, then appends units; shrinking gives back the units the consumer names
 * and leaves holes, so no other slot moves and no byte is copied.
 *
 * <p>{@link #segment}/{@link #offset} allocate nothing and take no lock (the segments are cached
 * when the units are taken). One thread at a time (the consumer's owner).
 */
public final class UnitSlots implements AutoCloseable {
    private final ElasticDramPool pool;
    private final long entryBytes;
    private final long unitBytes;
    private final int perUnit;
    /** Whether the pool's elastic cap applies (caches); memory that must be held (a window) is bounded by the DRAM budget only. */
    private final boolean capped;
    private int[] ids = new int[0]; // local unit → pool unit id, or -1 (a hole)
    private MemorySegment[] segments = new MemorySegment[0];
    private int held;
    private int[] scratchIds = new int[0];
    private MemorySegment[] scratchSegments = new MemorySegment[0];

    /** A cache storing entries of {@code entryBytes} (registered with the pool), under the pool's cap. */
    public UnitSlots(ElasticDramPool pool, long entryBytes) {
        this(pool, entryBytes, true);
    }

    /**
     * A consumer storing entries of {@code entryBytes}; {@code capped} false for memory that must be
     * held whatever the caches' cap (a window's tokens), bounded by the DRAM budget only.
     */
    public UnitSlots(ElasticDramPool pool, long entryBytes, boolean capped) {
        this.capped = capped;
        this.pool = Checks.notNull("pool", pool);
        this.entryBytes = Checks.positive("entryBytes", entryBytes);
        MinimumElasticUnit unit = pool.register(entryBytes);
        this.unitBytes = unit.unitBytes();
        this.perUnit = unit.entriesPerUnit(entryBytes);
    }

    /** Entry slots per unit (the consumer's minimum elastic unit, in entries). */
    public int perUnit() {
        return perUnit;
    }

    public long entryBytes() {
        return entryBytes;
    }

    public long unitBytes() {
        return unitBytes;
    }

    /** Units held now. */
    public int heldUnits() {
        return held;
    }

    /** Bytes of the units held. */
    public long heldBytes() {
        return held * unitBytes;
    }

    /** Local unit indexes in use or holes: slot numbers are below {@code capacityUnits() × perUnit()}. */
    public int capacityUnits() {
        return ids.length;
    }

    /** Slot numbers are below this ({@code capacityUnits() × perUnit()}). */
    public int slotLimit() {
        return (int) Math.min(Integer.MAX_VALUE - 8, (long) ids.length * perUnit);
    }

    /** Whether local unit {@code local} is held (not a hole). */
    public boolean held(int local) {
        return local >= 0 && local < ids.length && ids[local] >= 0;
    }

    /** The pool's id of local unit {@code local} (-1 for a hole). */
    public int poolId(int local) {
        return ids[Checks.index("local", local, ids.length)];
    }

    /** The segment of the unit holding slot {@code slot}. */
    public MemorySegment segment(int slot) {
        return segments[slot / perUnit];
    }

    /** Byte offset of slot {@code slot} in {@link #segment}. */
    public long offset(int slot) {
        return (slot % perUnit) * entryBytes;
    }

    /**
     * Takes {@code n} more units from the pool, into holes first. All or none.
     *
     * @throws io.kvoffload.KvDramExhaustedException when the pool has no room (nothing changes)
     */
    public void grow(int n) {
        Checks.inRange("n", n, 0, Integer.MAX_VALUE - 8);
        if (n == 0) {
            return;
        }
        if (scratchIds.length < n) {
            scratchIds = new int[n];
            scratchSegments = new MemorySegment[n];
        }
        pool.take(unitBytes, n, scratchIds, scratchSegments, capped);
        int holes = ids.length - held;
        if (n > holes) {
            int old = ids.length;
            ids = Arrays.copyOf(ids, old + n - holes);
            segments = Arrays.copyOf(segments, ids.length);
            Arrays.fill(ids, old, ids.length, -1);
        }
        int k = 0;
        for (int local = 0; local < ids.length && k < n; local++) {
            if (ids[local] < 0) {
                ids[local] = scratchIds[k];
                segments[local] = scratchSegments[k];
                scratchSegments[k] = null;
                k++;
            }
        }
        held += n;
    }

    /**
     * Takes one unit (into the lowest hole, else appended) and returns its local index. Allocates
     * nothing on the heap unless the index range grows or the pool allocates a chunk.
     */
    public int takeOne() {
        if (scratchIds.length < 1) {
            scratchIds = new int[1];
            scratchSegments = new MemorySegment[1];
        }
        pool.take(unitBytes, 1, scratchIds, scratchSegments, capped);
        int local = 0;
        while (local < ids.length && ids[local] >= 0) {
            local++;
        }
        if (local == ids.length) {
            ids = Arrays.copyOf(ids, Math.max(4, ids.length * 2));
            segments = Arrays.copyOf(segments, ids.length);
            Arrays.fill(ids, local, ids.length, -1);
        }
        ids[local] = scratchIds[0];
        segments[local] = scratchSegments[0];
        scratchSegments[0] = null;
        held++;
        return local;
    }

    /** Gives back local unit {@code local} (held; its slots must be empty now). */
    public void dropOne(int local) {
        if (!held(local)) {
            throw new IllegalArgumentException("local = " + local + " is not a held unit; allowed: local units that"
                    + " hold memory");
        }
        scratchIds[0] = ids[local];
        ids[local] = -1;
        segments[local] = null;
        pool.give(unitBytes, scratchIds, 1, capped);
        held--;
    }

    /** The segment of local unit {@code local} (null for a hole). */
    public MemorySegment unitSegment(int local) {
        return segments[local];
    }

    /** Gives back local units {@code locals[0 .. n)} (each held; their slots must be empty now). */
    public void drop(int[] locals, int n) {
        Checks.inRange("n", n, 0, locals.length);
        if (scratchIds.length < n) {
            scratchIds = new int[n];
            scratchSegments = new MemorySegment[n];
        }
        for (int i = 0; i < n; i++) {
            int local = locals[i];
            if (!held(local)) {
                throw new IllegalArgumentException("locals[" + i + "] = " + local + " is not a held unit; allowed: "
                        + "local units that hold memory");
            }
            scratchIds[i] = ids[local];
            ids[local] = -1;
            segments[local] = null;
        }
        pool.give(unitBytes, scratchIds, n, capped);
        held -= n;
        // Trailing holes shrink the slot range, so arrays sized by it stop growing.
        int end = ids.length;
        while (end > 0 && ids[end - 1] < 0) {
            end--;
        }
        if (end < ids.length) {
            ids = Arrays.copyOf(ids, end);
            segments = Arrays.copyOf(segments, end);
        }
    }

    /** Gives every unit back. */
    @Override
    public void close() {
        int n = 0;
        int[] all = new int[held];
        for (int local = 0; local < ids.length; local++) {
            if (ids[local] >= 0) {
                all[n++] = ids[local];
            }
        }
        pool.give(unitBytes, all, n, capped);
        Arrays.fill(ids, -1);
        Arrays.fill(segments, null);
        held = 0;
    }
}
