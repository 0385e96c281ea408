package io.kvoffload.internal.storage;

import io.kvoffload.KvChecksumException;
import io.kvoffload.KvException;
import io.kvoffload.internal.dram.DramSlot;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.spi.IoBatch;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Failover and repair for entries stored more than once (Swarm's replicas: a token in several
 * clusters). When the copy a read chose fails its checksum or its device erred, the other copies
 * are read one by one; the first that verifies is handed to the caller, within the same read or
 * fetch, and the bad copy is rewritten from it (read-modify-write of its aligned range, then a sync),
 * so the next read finds it whole. When no other copy serves, the first copy is read once more (a
 * fault in transit passes the second time). Only when nothing verifies does the read fail, naming
 * every copy tried. Runs only on the failure path; it may allocate.
 */
public final class ReplicaFailover {
    private static final Logger LOG = LoggerFactory.getLogger(ReplicaFailover.class);

    private final Store store;
    private final EntryVerifier verifier;
    private final String sequenceId;

    public ReplicaFailover(Store store, EntryChecksum checksum, String sequenceId) {
        this.store = store;
        this.verifier = new EntryVerifier(store, checksum, sequenceId);
        this.sequenceId = sequenceId;
    }

    /**
     * Puts a verified copy of stored entry {@code key} of {@code layer} (a token's entry, or of a
     * head-sharded layout one head group of token {@code key / shards}) into {@code dst} at
     * {@code dstAt} after the copy at ({@code badDevice}, {@code badOffset}) failed for {@code why}.
     *
     * @throws KvChecksumException when no other copy exists or none verifies (every copy is named)
     */
    public void recover(ClusterLayout cl, int layer, int key, int badDevice, long badOffset, String why,
            MemorySegment dst, long dstAt) {
        int entryBytes = cl.storedEntryBytes();
        int token = key / cl.shards();
        List<String> tried = new ArrayList<>();
        tried.add("device " + badDevice + " offset " + badOffset + " (" + why + ")");
        for (int r = 0; r < cl.count(key); r++) {
            int dev = cl.device(key, r);
            long off = cl.offset(key, r);
            if (dev == badDevice && off == badOffset) {
                continue;
            }
            int e = cl.entryAt(key, dev, off);
            if (store.devices().get(dev).failure() != null) {
                tried.add("device " + dev + " offset " + off + " (device failed)");
                continue;
            }
            try {
                MemorySegment good = readEntry(dev, off, cl, layer, key, e);
                if (good == null) {
                    tried.add("device " + dev + " offset " + off + " (checksum mismatch)");
                    continue;
                }
                MemorySegment.copy(good, 0, dst, dstAt, entryBytes);
                store.stats().failovers.increment();
                LOG.warn("sequence {} layer {} token {}: copy on device {} at {} failed ({}); served from device {} at {}",
                        sequenceId, layer, token, badDevice, badOffset, why, dev, off);
                repair(cl, layer, key, badDevice, badOffset, good);
                return;
            } catch (KvException | IOException ex) {
                tried.add("device " + dev + " offset " + off + " (" + ex.getMessage() + ")");
            }
        }
        // No other copy served: the first one may have suffered a fault in transit, not on the media.
        if (store.devices().get(badDevice).failure() == null) {
            try {
                MemorySegment again = readEntry(badDevice, badOffset, cl, layer, key, cl.entryAt(key, badDevice,
                        badOffset));
                if (again != null) {
                    MemorySegment.copy(again, 0, dst, dstAt, entryBytes);
                    store.stats().rereads.increment();
                    LOG.warn("sequence {} layer {} token {}: copy on device {} at {} failed ({}); a second read verified",
                            sequenceId, layer, token, badDevice, badOffset, why);
                    return;
                }
                tried.add("device " + badDevice + " offset " + badOffset + " again (checksum mismatch)");
            } catch (KvException | IOException ex) {
                tried.add("device " + badDevice + " offset " + badOffset + " again (" + ex.getMessage() + ")");
            }
        }
        if (fromRemote(cl, layer, key, badDevice, badOffset, dst, dstAt)) {
            return;
        }
        verifier.mismatch(badDevice, layer, token, true);
        throw new KvChecksumException("checksum mismatch on device " + badDevice + " ("
                + store.devices().get(badDevice).directory() + "), sequence " + sequenceId + ", layer " + layer
                + ", tokens " + token + ".." + token + ": no good copy is left; copies tried: " + tried, badDevice,
                sequenceId, layer, token, token + 1);
    }

    /**
     * No local copy verified: the remote tier's copy of the token's block (if the sequence published
     * it) serves the read when its entry matches the local checksum, and repairs the first bad copy.
     */
    private boolean fromRemote(ClusterLayout cl, int layer, int key, int badDevice, long badOffset, MemorySegment dst,
            long dstAt) {
        int entryBytes = cl.storedEntryBytes();
        int shards = cl.shards();
        int token = key / shards;
        Manifest m = store.committedManifest(sequenceId);
        if (m == null) {
            return false;
        }
        int bt = m.blockTokens();
        MemorySegment block = store.remoteBlock(sequenceId, layer, token / bt);
        if (block == null) {
            return false;
        }
        MemorySegment whole = MemorySegment.ofArray(new byte[entryBytes * shards]);
        RemoteCopy.entry(block, bt, entryBytes * shards / 2, token % bt, whole, 0);
        MemorySegment good = whole;
        if (shards > 1) {
            good = MemorySegment.ofArray(new byte[entryBytes]);
            HeadShards.extract(whole, 0, entryBytes * shards, key % shards, shards, good, 0);
        }
        int e = cl.entryAt(key, badDevice, badOffset);
        if (verifier.compute(cl.checksumKind(), layer, key, good.asByteBuffer()) != cl.entryCrc(e)) {
            LOG.warn("sequence {} layer {} token {}: the remote copy does not match the local checksum; not used",
                    sequenceId, layer, token);
            return false;
        }
        verifier.mismatch(badDevice, layer, token, false);
        verifier.verified();
        MemorySegment.copy(good, 0, dst, dstAt, entryBytes);
        store.stats().remoteFailovers.increment();
        LOG.warn("sequence {} layer {} token {}: no local copy verified; served from the remote tier", sequenceId, layer,
                token);
        repair(cl, layer, key, badDevice, badOffset, good);
        return true;
    }

    /** Reads the entry at ({@code dev}, {@code off}); returns its bytes if they verify, else null. */
    private MemorySegment readEntry(int dev, long off, ClusterLayout cl, int layer, int key, int e) throws IOException {
        int entryBytes = cl.storedEntryBytes();
        long start = alignedStart(dev, off);
        DramSlot slot = store.dram().acquire(alignedLength(dev, off, entryBytes));
        try {
            MemorySegment range = readRange(dev, off, entryBytes, slot);
            MemorySegment entry = range.asSlice(off - start, entryBytes);
            int actual = verifier.compute(cl.checksumKind(), layer, key, entry.asByteBuffer());
            if (actual != cl.entryCrc(e)) {
                return null;
            }
            verifier.verified();
            MemorySegment copy = MemorySegment.ofArray(new byte[entryBytes]);
            MemorySegment.copy(entry, 0, copy, 0, entryBytes);
            return copy;
        } finally {
            store.dram().release(slot);
        }
    }

    private long alignedStart(int dev, long off) {
        return off & -(long) store.devices().get(dev).alignment();
    }

    private long alignedLength(int dev, long off, int entryBytes) {
        return Checks.alignUp(off + entryBytes, store.devices().get(dev).alignment()) - alignedStart(dev, off);
    }

    /** Reads the aligned range holding the entry at ({@code dev}, {@code off}) into {@code slot}. */
    private MemorySegment readRange(int dev, long off, int entryBytes, DramSlot slot) {
        MemorySegment buf = slot.segment().asSlice(0, alignedLength(dev, off, entryBytes));
        IoBatch batch = store.backend().newBatch(1);
        batch.addRead(dev, alignedStart(dev, off), buf, 0);
        store.execute(batch);
        return buf;
    }

    /** Rewrites the bad copy from the good bytes; a failure is logged, the read already succeeded. */
    private void repair(ClusterLayout cl, int layer, int key, int dev, long off, MemorySegment good) {
        if (store.devices().get(dev).failure() != null) {
            return; // nothing is written to a failed device
        }
        int entryBytes = cl.storedEntryBytes();
        int token = key / cl.shards();
        long start = alignedStart(dev, off);
        DramSlot slot = store.dram().acquire(alignedLength(dev, off, entryBytes));
        try {
            // The neighbours in the same aligned range must be kept as they are; repairs on one device
            // are serialised so that two of them in one range cannot undo each other.
            synchronized (store.devices().get(dev)) {
                MemorySegment buf = readRange(dev, off, entryBytes, slot);
                IoBatch batch = store.backend().newBatch(1);
                MemorySegment.copy(good, 0, buf, off - start, entryBytes);
                batch.addWrite(dev, start, buf, 0);
                store.execute(batch);
                store.backend().sync(dev);
            }
            store.stats().repairs.increment();
            LOG.warn("sequence {} layer {} token {}: rewrote the bad copy on device {} at {}", sequenceId, layer, token,
                    dev, off);
        } catch (KvException | IOException e) {
            LOG.warn("sequence {} layer {} token {}: could not rewrite the bad copy on device {} at {}: {}", sequenceId,
                    layer, token, dev, off, e.toString());
        } finally {
            store.dram().release(slot);
        }
    }
}
