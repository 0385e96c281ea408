package io.kvoffload.internal.storage;

import io.kvoffload.KvIoException;
import io.kvoffload.internal.dram.DramSlot;
import io.kvoffload.spi.IoBatch;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * Writes a set of fresh extents over several devices, all or nothing: each extent is allocated for
 * its owner, filled in a DRAM slot and queued; a full batch is written out; {@link #finish} writes
 * the rest and syncs every device written. Until {@link #keep} is called, {@link #close} (on any
 * failure) frees every extent allocated, so a layout that was not completely written leaves no
 * space behind. The DRAM slots are released in every case. Used by the cluster and group layout
 * writers; offline work, it may allocate.
 */
final class ExtentBatchWriter implements AutoCloseable {
    private final Store store;
    private final String owner;
    private final IoBatch batch;
    private final DramSlot[] slots;
    private final boolean[] written;
    /** Every extent allocated so far: device, offset, length. */
    private final List<long[]> allocated = new ArrayList<>();
    private boolean kept;

    /**
     * @param owner the sequence the extents are for (an allocation never evicts its owner)
     * @param batchCapacity writes per submission
     */
    ExtentBatchWriter(Store store, String owner, int batchCapacity) {
        this.store = store;
        this.owner = owner;
        this.batch = store.backend().newBatch(batchCapacity);
        this.slots = new DramSlot[batchCapacity];
        this.written = new boolean[store.devices().size()];
    }

    /**
     * Allocates {@code len} bytes, on {@code device} if it has room (a full device hands the extent
     * to another one), and returns the packed device and offset ({@link Store#packedDevice},
     * {@link Store#packedOffset}).
     */
    long allocate(int device, long len) {
        long packed = store.allocate(device, len, owner);
        allocated.add(new long[] {Store.packedDevice(packed), Store.packedOffset(packed), len});
        return packed;
    }

    /** A DRAM buffer of {@code len} bytes for the next {@link #write}, released after it was written. */
    MemorySegment stage(long len) {
        DramSlot slot = store.dram().acquire(len);
        slots[batch.size()] = slot;
        return slot.segment();
    }

    /** Queues the write of the buffer {@link #stage} returned last; a full batch is written out. */
    void write(int device, long offset, MemorySegment data, long tag) {
        batch.addWrite(device, offset, data, tag);
        written[device] = true;
        if (batch.isFull()) {
            flush();
        }
    }

    /** Writes out what is queued. */
    void flush() {
        store.executeAndRelease(batch, slots);
    }

    /**
     * Writes out what is queued and syncs every device written.
     *
     * @throws KvIoException if a write or a device's fdatasync fails
     */
    void finish() {
        flush();
        for (int d = 0; d < written.length; d++) {
            if (written[d]) {
                store.syncDevice(d);
            }
        }
    }

    /** The extents are in use now: {@link #close} leaves them allocated. */
    void keep() {
        kept = true;
    }

    /** Releases the DRAM slots still held and, unless {@link #keep} was called, frees every extent allocated. */
    @Override
    public void close() {
        for (int i = 0; i < slots.length; i++) {
            if (slots[i] != null) {
                store.dram().release(slots[i]);
                slots[i] = null;
            }
        }
        if (!kept) {
            for (long[] x : allocated) {
                store.free((int) x[0], x[1], x[2]);
            }
        }
    }
}
