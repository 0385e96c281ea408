package io.kvoffload.internal.sequence;

import io.kvoffload.KvIoException;
import io.kvoffload.KvShape;
import io.kvoffload.internal.dram.DramSlot;
import io.kvoffload.internal.storage.BlockTable;
import io.kvoffload.internal.storage.EntryChecksum;
import io.kvoffload.internal.storage.Layout;
import io.kvoffload.internal.storage.Store;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.spi.IoBatch;
import java.lang.foreign.MemorySegment;
import java.util.zip.CRC32C;

/**
 * The write side of a sequence handle: each layer's partial last block (its <em>tail</em>) in a
 * DRAM slot; a block that fills is sealed (checksummed, given a fresh extent, copy-on-write) and
 * queued; queued writes go out in batches, moving off devices that run out of space. A write that
 * fails leaves the handle {@linkplain #broken() broken}: its last commit is intact but it cannot be
 * completed.
 */
public final class BlockWriter {
    /** Requests per write batch. */
    static final int IO_BATCH = 64;

    /** Brings block {@code block} of {@code layer} back from the SSDs into {@code slot}, verified. */
    @FunctionalInterface
    public interface BlockLoader {
        void load(int layer, int block, DramSlot slot);
    }

    private final Store store;
    private final ExtentLedger ledger;
    private final KvShape shape;
    private final String id;
    private final EntryChecksum checksum;
    private final int blockTokens;
    private final long extentBytes;
    private final int half;
    private final int entry;
    private final BlockLoader loader;

    private final DramSlot[] tail;
    private final boolean[] tailDirty;
    private final boolean[] devicesWritten;
    private IoBatch writeBatch;
    private final DramSlot[] pendingSlots = new DramSlot[IO_BATCH];
    private final boolean[] pendingRelease = new boolean[IO_BATCH];
    private final CRC32C crc = new CRC32C();
    private String broken;

    public BlockWriter(Store store, ExtentLedger ledger, String id, KvShape shape, EntryChecksum checksum,
            int blockTokens, long extentBytes, BlockLoader loader) {
        this.store = store;
        this.ledger = ledger;
        this.shape = shape;
        this.id = id;
        this.checksum = checksum;
        this.blockTokens = blockTokens;
        this.extentBytes = extentBytes;
        this.half = shape.halfEntryBytes();
        this.entry = shape.entryBytes();
        this.loader = loader;
        this.tail = new DramSlot[shape.layers()];
        this.tailDirty = new boolean[shape.layers()];
        this.devicesWritten = new boolean[store.devices().size()];
    }

    /** @throws IllegalStateException if a write failed: the handle can no longer be completed */
    public void checkNotBroken() {
        if (broken != null) {
            throw new IllegalStateException("sequence " + id + " had a failed write (" + broken
                    + "); close it: its last commit is intact");
        }
    }

    /** The DRAM slot of the layer's partial last block, or null. */
    public DramSlot tail(int layer) {
        return tail[layer];
    }

    /**
     * Appends K and V of the next tokens of {@code layer} (of {@code declaredTokens} token ids); full
     * blocks are sealed and their writes flushed before this returns.
     *
     * @throws IllegalArgumentException if the segments differ in size, do not hold whole tokens, or
     *     hold more tokens than were declared
     */
    public void append(int layer, MemorySegment keys, MemorySegment values, int declaredTokens) {
        Checks.notNull("keys", keys);
        Checks.notNull("values", values);
        if (keys.byteSize() != values.byteSize()) {
            throw new IllegalArgumentException("keys has " + keys.byteSize() + " bytes but values has "
                    + values.byteSize() + "; both must hold the same number of tokens");
        }
        if (keys.byteSize() % half != 0) {
            throw new IllegalArgumentException("keys has " + keys.byteSize() + " bytes, not a multiple of one token's K ("
                    + half + " bytes = kvHeads " + shape.kvHeads() + " × headDim " + shape.headDim() + " × "
                    + shape.dtype() + ")");
        }
        long n = keys.byteSize() / half;
        LayerState s = ledger.layer(layer);
        if (s.tokens + n > declaredTokens) {
            throw new IllegalArgumentException("layer " + layer + " would hold " + (s.tokens + n)
                    + " tokens but only " + declaredTokens + " token ids were appended; call appendTokens first"
                    + " (allowed: at most " + (declaredTokens - s.tokens) + " more tokens for this layer)");
        }
        write(layer, keys, values, (int) n);
    }

    private void write(int layer, MemorySegment keys, MemorySegment values, int n) {
        LayerState s = ledger.layer(layer);
        int done = 0;
        try {
            while (done < n) {
                int t = s.tokens;
                int b = t / blockTokens;
                int inBlock = t % blockTokens;
                DramSlot slot = tail[layer];
                if (slot == null) {
                    slot = store.dram().acquire(extentBytes);
                    tail[layer] = slot;
                    if (inBlock > 0) {
                        // Reopened sequence whose last block is partial: bring it back before extending it.
                        loader.load(layer, b, slot);
                    }
                }
                int take = Math.min(blockTokens - inBlock, n - done);
                MemorySegment dst = slot.segment();
                for (int i = 0; i < take; i++) {
                    long eo = (long) (inBlock + i) * entry;
                    MemorySegment.copy(keys, (long) (done + i) * half, dst, eo, half);
                    MemorySegment.copy(values, (long) (done + i) * half, dst, eo + half, half);
                }
                s.tokens += take;
                done += take;
                tailDirty[layer] = true;
                if (inBlock + take == blockTokens) {
                    tail[layer] = null;
                    seal(layer, b, slot, blockTokens, true);
                }
            }
        } finally {
            flush();
        }
    }

    /**
     * Block {@code b} of {@code layer} arrives whole in {@code slot} ({@code tokens} tokens, copied
     * from another sequence by a fork): a full block is sealed and queued like an appended one (the
     * slot is released once written); a partial one is the layer's last and becomes its dirty tail,
     * written by the next commit or extended by the next append.
     */
    void adoptBlock(int layer, int b, DramSlot slot, int tokens) {
        if (tokens == blockTokens) {
            seal(layer, b, slot, blockTokens, true);
            flush();
        } else {
            tail[layer] = slot;
            tailDirty[layer] = true;
        }
    }

    /** Seals every partial last block appended to since the last commit (its slot stays the tail). */
    void sealPartialTails() {
        for (int l = 0; l < tail.length; l++) {
            if (tail[l] != null && tailDirty[l]) {
                LayerState s = ledger.layer(l);
                seal(l, s.tokens / blockTokens, tail[l], s.tokens % blockTokens, false);
            }
        }
    }

    /**
     * Makes the writes on every device written since the last sync durable.
     *
     * @throws KvIoException if a device's fdatasync fails
     */
    void syncWrittenDevices() {
        for (int d = 0; d < devicesWritten.length; d++) {
            if (devicesWritten[d]) {
                store.syncDevice(d);
                devicesWritten[d] = false;
            }
        }
    }

    /** A commit made the tails durable. */
    void markCommitted() {
        java.util.Arrays.fill(tailDirty, false);
    }

    /** Returns the tails' DRAM slots (a writer's close). */
    public void releaseTails() {
        for (int l = 0; l < tail.length; l++) {
            if (tail[l] != null) {
                store.dram().release(tail[l]);
                tail[l] = null;
            }
        }
    }

    /** Gives block {@code b} a fresh extent (copy-on-write) and queues its write from {@code slot}. */
    private void seal(int layer, int b, DramSlot slot, int tokens, boolean releaseAfter) {
        MemorySegment seg = slot.segment();
        long used = (long) tokens * entry;
        if (used < extentBytes) {
            seg.asSlice(used, extentBytes - used).fill((byte) 0);
        }
        MemorySegment data = seg.asSlice(0, extentBytes);
        int sum = checksum.compute(crc, EntryChecksum.Kind.BLOCK, layer, b * blockTokens, data.asByteBuffer());
        int preferred = Layout.stripeDevice(layer, b, store.devices().size());
        long packed;
        try {
            packed = store.allocate(preferred, extentBytes, id);
        } catch (RuntimeException e) {
            if (releaseAfter) {
                // The block's only copy was this slot: the sequence can no longer be completed.
                store.dram().release(slot);
                broken = "layer " + layer + " block " + b + " could not be stored: " + e.getMessage();
            }
            throw e;
        }
        BlockTable t = ledger.layer(layer).blocks;
        if (t.hasExtent(b)) {
            ledger.retire(t, b);
        }
        int dev = Store.packedDevice(packed);
        long off = Store.packedOffset(packed);
        t.set(b, dev, off, (int) extentBytes, sum, false);
        if (writeBatch == null) {
            writeBatch = store.backend().newBatch(IO_BATCH);
        }
        int i = writeBatch.addWrite(dev, off, data, (long) layer << 32 | b);
        pendingSlots[i] = slot;
        pendingRelease[i] = releaseAfter;
        devicesWritten[dev] = true;
        if (writeBatch.isFull()) {
            flush();
        }
    }

    /** Writes out the queued blocks (before anything reads or retires their extents). */
    public void flush() {
        IoBatch batch = writeBatch;
        if (batch == null || batch.size() == 0) {
            return;
        }
        try {
            executeMovingOffFullDevices(batch);
        } catch (KvIoException e) {
            broken = e.getMessage();
            throw e;
        } finally {
            for (int i = 0; i < batch.size(); i++) {
                if (pendingRelease[i]) {
                    store.dram().release(pendingSlots[i]);
                }
                pendingSlots[i] = null;
            }
            batch.clear();
        }
    }

    /**
     * Runs a batch of block writes; when a device answers ENOSPC (thin-provisioned or copy-on-write
     * storage; the store then marks it full), the blocks it held get fresh extents on other devices
     * and the whole batch is written again (only the first failure of a batch is known, and writing a
     * block twice is harmless), at most once per device.
     */
    private void executeMovingOffFullDevices(IoBatch batch) {
        for (int attempt = 0; ; attempt++) {
            try {
                store.execute(batch);
                return;
            } catch (KvIoException e) {
                if (e.errno() != 28 || attempt >= store.devices().size()) {
                    throw e;
                }
                int n = batch.size();
                int[] dev = new int[n];
                long[] off = new long[n];
                long[] tag = new long[n];
                MemorySegment[] data = new MemorySegment[n];
                for (int i = 0; i < n; i++) {
                    dev[i] = batch.device(i);
                    off[i] = batch.offset(i);
                    tag[i] = batch.tag(i);
                    data[i] = batch.buffer(i);
                }
                batch.clear();
                for (int i = 0; i < n; i++) {
                    if (store.devices().get(dev[i]).full()) {
                        int layer = (int) (tag[i] >>> 32);
                        int b = (int) tag[i];
                        BlockTable t = ledger.layer(layer).blocks;
                        long packed = store.allocate(dev[i], data[i].byteSize(), id);
                        store.free(dev[i], off[i], data[i].byteSize()); // never written: no manifest names it
                        dev[i] = Store.packedDevice(packed);
                        off[i] = Store.packedOffset(packed);
                        t.set(b, dev[i], off[i], t.length(b), t.crc(b), false);
                        devicesWritten[dev[i]] = true;
                    }
                    batch.addWrite(dev[i], off[i], data[i], tag[i]);
                }
            }
        }
    }
}
