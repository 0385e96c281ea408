package io.kvoffload.strategy;

import io.kvoffload.internal.util.IntList;
import io.kvoffload.internal.util.StampSet;
import java.lang.foreign.MemorySegment;

/**
 * A step's auxiliary read: units of the strategy's own unit layout ({@link UnitLayouts#write}) that
 * a {@link LayerSelector} asks for in {@link LayerSelector#planUnits} and reads in
 * {@link LayerSelector#select} (through {@link FetchPlan#units()}), before it chooses positions —
 * InstInfer's first step, which reads the dimension slices of K that approximate the scores. The
 * pipeline reads them like every fetch: the bucket scheduler spreads them over the SSDs and merges
 * adjacent units, one batched submission, and each unit is verified against its checksum as its
 * read lands; {@link #offset} is valid only for a unit that landed verified this step.
 *
 * <p>One per pipeline slot, reused every step: it allocates only when a step asks for more units
 * than any before.
 */
public final class UnitReads {
    private final IntList units = new IntList(64);
    private int unitCount;
    private int unitBytes;
    private long[] at = new long[0];
    private final StampSet arrived = new StampSet();
    private MemorySegment data = MemorySegment.NULL;

    /** Starts a step over a layout of {@code unitCount} units of {@code unitBytes} bytes; called by the pipeline. */
    public void begin(int unitCount, int unitBytes) {
        this.unitCount = unitCount;
        this.unitBytes = unitBytes;
        units.clear();
        if (arrived.clear(unitCount)) {
            at = new long[arrived.capacity()];
        }
    }

    /** Units in the layer's unit layout (0 when it has none). */
    public int unitCount() {
        return unitCount;
    }

    /** Data bytes of one unit. */
    public int unitBytes() {
        return unitBytes;
    }

    /**
     * Asks for unit {@code unit} (repeats are read once).
     *
     * @throws IllegalArgumentException if {@code unit} is outside {@code [0, unitCount())}
     */
    public void add(int unit) {
        if (unit < 0 || unit >= unitCount) {
            throw new IllegalArgumentException("unit = " + unit + " is out of range; allowed: 0.." + (unitCount - 1));
        }
        units.add(unit);
    }

    /** Units asked for this step (repeats counted). */
    public int size() {
        return units.size();
    }

    /** The {@code i}-th unit asked for; the pipeline reads the list through this. */
    public int unit(int i) {
        if (i < 0 || i >= units.size()) {
            throw new IndexOutOfBoundsException("i = " + i + "; allowed: 0.." + (units.size() - 1));
        }
        return units.array()[i];
    }

    /** The units asked for, {@code [0, size())} valid; the pipeline's scheduler reads them without a copy. */
    public int[] unitArray() {
        return units.array();
    }

    /** Unit {@code unit} landed verified at {@code offset} of {@code memory}; called by the pipeline. */
    public void landed(int unit, MemorySegment memory, long offset) {
        data = memory;
        arrived.add(unit);
        at[unit] = offset;
    }

    /** The memory the landed units are in (read-only for the strategy by contract; valid until the next step). */
    public MemorySegment data() {
        return data;
    }

    /** Whether unit {@code unit} landed verified this step. */
    public boolean landed(int unit) {
        return unit >= 0 && unit < unitCount && arrived.contains(unit);
    }

    /**
     * Where unit {@code unit}'s {@link #unitBytes()} bytes start in {@link #data()}.
     *
     * @throws IllegalStateException if it did not land this step (it was not asked for)
     */
    public long offset(int unit) {
        if (!landed(unit)) {
            throw new IllegalStateException("unit " + unit + " was not read this step; ask for it in planUnits");
        }
        return at[unit];
    }
}
