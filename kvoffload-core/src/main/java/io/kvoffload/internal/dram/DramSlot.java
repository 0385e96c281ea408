package io.kvoffload.internal.dram;

import java.lang.foreign.MemorySegment;

/**
 * One fixed-size, 4096-aligned slot of a DRAM slab. Created once with its slab and recycled, so
 * taking and returning a slot allocates nothing.
 */
public final class DramSlot {
    final DramPool.SizeClass sizeClass;
    final int slabId;
    private final MemorySegment segment;
    boolean inUse;

    DramSlot(DramPool.SizeClass sizeClass, int slabId, MemorySegment segment) {
        this.sizeClass = sizeClass;
        this.slabId = slabId;
        this.segment = segment;
    }

    /** The slot's memory; valid until the slot is released or the pool is closed. */
    public MemorySegment segment() {
        return segment;
    }

    /** The id of the slab the slot lives in (as given to {@link io.kvoffload.spi.DramSlabListener}). */
    public int slabId() {
        return slabId;
    }

    public long byteSize() {
        return segment.byteSize();
    }
}
