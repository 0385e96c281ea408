package io.kvoffload.spi;

import java.lang.foreign.MemorySegment;

/**
 * The DRAM tier as a device tier sees it: fixed-size, 4096-aligned slots carved from slabs that
 * every {@link DramSlabListener} was told about (so the CUDA tier has page-locked them and they can
 * be the source or target of an asynchronous copy).
 */
public interface HostSlots {
    /**
     * Takes a slot of at least {@code bytes} bytes (rounded up to 4096).
     *
     * @throws io.kvoffload.KvDramExhaustedException when the DRAM budget allows no new slab
     */
    Lease acquire(long bytes);

    /** One slot; closing it returns the slot to the DRAM tier (once). */
    interface Lease extends AutoCloseable {
        MemorySegment segment();

        /** The slab the slot lives in, as given to {@link DramSlabListener}. */
        int slabId();

        @Override
        void close();
    }
}
