package io.kvoffload.internal.sequence;

import io.kvoffload.internal.storage.EntryVerifier;
import io.kvoffload.KvIoException;
import io.kvoffload.KvShape;
import io.kvoffload.internal.dram.DramSlot;
import io.kvoffload.internal.sched.BucketScheduler;
import io.kvoffload.internal.storage.BlockTable;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.EntryChecksum;
import io.kvoffload.internal.storage.GroupLayout;
import io.kvoffload.internal.storage.RemoteCopy;
import io.kvoffload.internal.storage.ReplicaFailover;
import io.kvoffload.internal.storage.Store;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.spi.IoBatch;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * The read side of a sequence handle: gathers any token positions of a layer from wherever they
 * live (the DRAM tail, block extents, the cluster layout through the bucket scheduler, or the group
 * layout), verifying everything read from the SSDs ({@link EntryVerifier}). A block that fails its
 * checksum is read a second time (it has one copy); a cluster entry fails over to another replica.
 */
public final class SequenceReader {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(SequenceReader.class);
    private static final int IO_BATCH = BlockWriter.IO_BATCH;

    private final Store store;
    private final ExtentLedger ledger;
    private final String id;
    private final EntryChecksum checksum;
    private final EntryVerifier verifier;
    private final int blockTokens;
    private final long extentBytes;
    private final int alignment;
    private final int half;
    private final int entry;

    private IoBatch readBatch;
    private BucketScheduler clusterScheduler;
    private ReplicaFailover failover;

    public SequenceReader(Store store, ExtentLedger ledger, String id, KvShape shape, EntryChecksum checksum,
            int blockTokens, long extentBytes, int alignment) {
        this.store = store;
        this.ledger = ledger;
        this.id = id;
        this.checksum = checksum;
        this.verifier = new EntryVerifier(store, checksum, id);
        this.blockTokens = blockTokens;
        this.extentBytes = extentBytes;
        this.alignment = alignment;
        this.half = shape.halfEntryBytes();
        this.entry = shape.entryBytes();
    }

    /**
     * Checks the arguments of a read of {@code positions} of {@code layer} (whose partial last
     * block, if any, is {@code tail}), then gathers them token-major into the outputs.
     */
    public void read(int layer, int[] positions, MemorySegment keysOut, MemorySegment valuesOut, DramSlot tail) {
        Checks.notNull("positions", positions);
        int limit = ledger.layer(layer).tokens;
        for (int i = 0; i < positions.length; i++) {
            int p = positions[i];
            if (p < 0 || p >= limit) {
                throw new IllegalArgumentException("positions[" + i + "] = " + p + " is out of range; allowed: 0.."
                        + (limit - 1) + " (layer " + layer + " holds " + limit + " tokens)");
            }
        }
        checkOut("keysOut", keysOut, positions.length);
        checkOut("valuesOut", valuesOut, positions.length);
        if (positions.length == 0) {
            return;
        }
        gather(layer, positions, keysOut, valuesOut, tail);
    }

    /**
     * The positions {@code [from, from + count)} of {@code layer}.
     *
     * @throws IllegalArgumentException if they are not all held by the layer
     */
    public int[] range(int layer, int from, int count) {
        int limit = ledger.layer(layer).tokens;
        Checks.inRange("from", from, 0, limit);
        Checks.inRange("count", count, 0, limit - from);
        int[] positions = new int[count];
        for (int i = 0; i < count; i++) {
            positions[i] = from + i;
        }
        return positions;
    }

    private void checkOut(String name, MemorySegment out, int n) {
        Checks.notNull(name, out);
        long need = (long) n * half;
        if (out.byteSize() < need) {
            throw new IllegalArgumentException(name + " has " + out.byteSize() + " bytes; " + n + " positions need "
                    + need + " (" + half + " bytes per token)");
        }
        if (out.isReadOnly()) {
            throw new IllegalArgumentException(name + " is read-only");
        }
    }

    /** Brings block {@code b} of {@code layer} into {@code slot}, verified (a reopened sequence's partial block). */
    public void loadBlock(int layer, int b, DramSlot slot) {
        readBlocksInto(layer, new int[] {b}, new DramSlot[] {slot}, 1);
    }

    private IoBatch readBatch() {
        if (readBatch == null) {
            readBatch = store.backend().newBatch(IO_BATCH);
        }
        return readBatch;
    }

    private void gather(int layer, int[] positions, MemorySegment keysOut, MemorySegment valuesOut, DramSlot tail) {
        LayerState s = ledger.layer(layer);
        ClusterLayout cl = s.clusters;
        GroupLayout gl = s.groups;
        int clustered = s.laidOutTokens();
        int n = 0;
        int m = 0;
        for (int p : positions) {
            if (p < clustered) {
                m++;
            } else {
                n++;
            }
        }
        if (m > 0 && cl != null) {
            gatherClustered(layer, cl, positions, m, keysOut, valuesOut);
        } else if (m > 0) {
            gatherGrouped(layer, gl, positions, m, keysOut, valuesOut);
        }
        if (n == 0) {
            return;
        }
        long[] order = new long[n];
        for (int i = 0, k = 0; i < positions.length; i++) {
            if (positions[i] >= clustered) {
                order[k++] = ((long) (positions[i] / blockTokens) << 32) | i;
            }
        }
        Arrays.sort(order);
        int tailBlock = tail != null ? s.tokens / blockTokens : -1;
        int[] groupStart = new int[IO_BATCH];
        int[] groupBlock = new int[IO_BATCH];
        DramSlot[] staging = new DramSlot[IO_BATCH];
        try {
            int i = 0;
            while (i < n) {
                int groups = 0;
                while (i < n && groups < IO_BATCH) {
                    int b = (int) (order[i] >>> 32);
                    int j = i;
                    while (j < n && (int) (order[j] >>> 32) == b) {
                        j++;
                    }
                    if (b == tailBlock) {
                        copyOut(tail.segment(), order, i, j, positions, keysOut, valuesOut);
                    } else {
                        if (staging[groups] == null) {
                            staging[groups] = groups == 0 ? store.dram().acquire(extentBytes)
                                    : store.dram().tryAcquire(extentBytes);
                            if (staging[groups] == null) {
                                break; // DRAM is tight: read what we have staged, then continue
                            }
                        }
                        groupStart[groups] = i;
                        groupBlock[groups] = b;
                        groups++;
                    }
                    i = j;
                }
                if (groups == 0) {
                    continue;
                }
                readBlocksInto(layer, groupBlock, staging, groups);
                for (int g = 0; g < groups; g++) {
                    copyOut(staging[g].segment(), order, groupStart[g], endOfGroup(order, groupStart[g]), positions,
                            keysOut, valuesOut);
                }
            }
        } finally {
            for (DramSlot slot : staging) {
                if (slot != null) {
                    store.dram().release(slot);
                }
            }
        }
    }

    /**
     * Reads grouped tokens: each distinct group once (one aligned read of its stride, or one per head
     * group of a head-sharded layout), up to {@value #IO_BATCH} reads per submission; each stored key
     * is checked against its CRC32C, then its tokens (or their heads of its head group) are copied to
     * every output index that asked for them.
     */
    private void gatherGrouped(int layer, GroupLayout gl, int[] positions, int m, MemorySegment keysOut,
            MemorySegment valuesOut) {
        long[] order = laidOutOrder(positions, m, gl.groupedTokens());
        int g = gl.groupSize();
        int stride = gl.stride();
        int data = gl.storedBytes();
        int shards = gl.shards();
        long part = half / shards; // K (or V) bytes of one token in one stored key
        int perBatch = Math.max(IO_BATCH, shards);
        IoBatch batch = readBatch();
        DramSlot staging = store.dram().acquire((long) perBatch * stride);
        int[] groupAt = new int[perBatch];
        int[] firstAt = new int[perBatch];
        try {
            MemorySegment mem = staging.segment();
            int q = 0;
            while (q < m) {
                int n = 0; // groups in this submission, each read as its `shards` keys
                while (q < m && (n + 1) * shards <= perBatch) {
                    int grp = (int) (order[q] >>> 32) / g;
                    groupAt[n] = grp;
                    firstAt[n] = q;
                    for (int s = 0; s < shards; s++) {
                        int key = grp * shards + s;
                        batch.addRead(gl.groupDevice(key), gl.groupOffset(key), mem, (long) (n * shards + s) * stride,
                                stride, key);
                    }
                    n++;
                    while (q < m && (int) (order[q] >>> 32) / g == grp) {
                        q++;
                    }
                }
                try {
                    store.execute(batch);
                } finally {
                    batch.clear();
                }
                for (int i = 0; i < n; i++) {
                    int grp = groupAt[i];
                    for (int s = 0; s < shards; s++) {
                        int key = grp * shards + s;
                        long base = (long) (i * shards + s) * stride;
                        if (verifier.enabled()) {
                            int actual = verifier.compute(gl.checksumKind(), layer, gl.checksumPosition(key),
                                    mem.asSlice(base, data).asByteBuffer());
                            if (actual != gl.groupCrc(key)) {
                                throw verifier.failure(gl.groupDevice(key), layer, grp * g, grp * g + g, gl.groupCrc(key),
                                        actual);
                            }
                            verifier.verified();
                        }
                        int end = i + 1 < n ? firstAt[i + 1] : q;
                        for (int k = firstAt[i]; k < end; k++) {
                            int idx = (int) order[k];
                            int inGroup = (int) (order[k] >>> 32) - grp * g;
                            long dst = (long) idx * half + s * part; // the key's heads' place in the row
                            MemorySegment.copy(mem, base + inGroup * part, keysOut, dst, part);
                            MemorySegment.copy(mem, base + (g + inGroup) * part, valuesOut, dst, part);
                        }
                    }
                }
            }
        } finally {
            store.dram().release(staging);
        }
    }

    /**
     * Reads clustered tokens: the bucket scheduler picks one copy of each distinct token, balancing
     * the devices and merging neighbours into runs; each run is one aligned read into a staging
     * slot; each entry is checked against its own CRC32C, then copied to every output index that
     * asked for its token.
     */
    private void gatherClustered(int layer, ClusterLayout cl, int[] positions, int m, MemorySegment keysOut,
            MemorySegment valuesOut) {
        long[] order = laidOutOrder(positions, m, cl.clusteredTokens());
        int shards = cl.shards();
        int[] tokens = new int[m * shards];
        int u = 0;
        for (int k = 0; k < m; k++) {
            int t = (int) (order[k] >>> 32);
            if (u == 0 || tokens[u - 1] / shards != t) {
                for (int g = 0; g < shards; g++) {
                    tokens[u++] = t * shards + g; // a head-sharded layout's keys: each head group of the token
                }
            }
        }
        int align = alignment;
        if (clusterScheduler == null) {
            clusterScheduler = new BucketScheduler(store.devices().size(), entry, Math.max(1, (256 << 10) / entry),
                    BucketScheduler.Mode.BALANCED);
        }
        BucketScheduler sched = clusterScheduler;
        sched.entryBytes(cl.storedEntryBytes());
        sched.plan(tokens, u, cl, null);
        IoBatch batch = readBatch();
        DramSlot[] slots = new DramSlot[IO_BATCH];
        int[] runOf = new int[IO_BATCH];
        try {
            int r = 0;
            while (r < sched.runs()) {
                int inBatch = 0;
                while (r < sched.runs() && inBatch < IO_BATCH) {
                    long start = sched.runOffset(r) & -(long) align;
                    long len = Checks.alignUp(sched.runOffset(r) + sched.runBytes(r), align) - start;
                    DramSlot slot = inBatch == 0 ? store.dram().acquire(len) : store.dram().tryAcquire(len);
                    if (slot == null) {
                        break;
                    }
                    slots[inBatch] = slot;
                    runOf[inBatch] = r;
                    batch.addRead(sched.runDevice(r), start, slot.segment().asSlice(0, len), r);
                    inBatch++;
                    r++;
                }
                String failed = null;
                try {
                    store.execute(batch);
                } catch (KvIoException e) {
                    if (!verifier.enabled()) {
                        throw e;
                    }
                    // Every request has finished; the runs that failed will not verify and fail over.
                    failed = e.getMessage();
                } finally {
                    batch.clear();
                }
                for (int g = 0; g < inBatch; g++) {
                    copyRun(layer, cl, sched, runOf[g], slots[g].segment(), align, order, keysOut, valuesOut, failed);
                    store.dram().release(slots[g]);
                    slots[g] = null;
                }
            }
        } finally {
            for (DramSlot slot : slots) {
                if (slot != null) {
                    store.dram().release(slot);
                }
            }
        }
    }

    private void copyRun(int layer, ClusterLayout cl, BucketScheduler sched, int r, MemorySegment staged, int align,
            long[] order, MemorySegment keysOut, MemorySegment valuesOut, String ioFailure) {
        int dev = sched.runDevice(r);
        long runStart = sched.runOffset(r);
        long base = runStart & -(long) align;
        int unit = cl.storedEntryBytes();
        int shards = cl.shards();
        long part = unit / 2; // K (or V) bytes of one stored entry: all heads, or one head group's
        for (int k = 0; k < sched.runEntries(r); k++) {
            int key = sched.plannedEntries()[sched.runFirst(r) + k];
            int token = key / shards;
            long off = runStart + (long) k * unit;
            MemorySegment src = staged.asSlice(off - base, unit);
            if (verifier.enabled()) {
                int e = cl.entryAt(key, dev, off);
                int actual = verifier.compute(cl.checksumKind(), layer, key, src.asByteBuffer());
                if (actual != cl.entryCrc(e)) {
                    // Another copy, if the key has one, serves the read and repairs this one.
                    failover().recover(cl, layer, key, dev, off, ioFailure != null ? "the batch failed: " + ioFailure
                            : "checksum mismatch", staged, off - base);
                } else {
                    verifier.verified();
                }
            }
            // Every output index that asked for this token (positions may repeat); a head group
            // lands at its heads' place in the token-major row.
            long at = (key % shards) * part;
            int lo = firstIndexOf(order, token);
            for (int q = lo; q < order.length && (int) (order[q] >>> 32) == token; q++) {
                int idx = (int) order[q];
                MemorySegment.copy(src, 0, keysOut, (long) idx * half + at, part);
                MemorySegment.copy(src, part, valuesOut, (long) idx * half + at, part);
            }
        }
    }

    private ReplicaFailover failover() {
        if (failover == null) {
            failover = new ReplicaFailover(store, checksum, id);
        }
        return failover;
    }

    /**
     * The {@code m} output indices whose position is below {@code laidOut} (the tokens a layout
     * holds), each as {@code position << 32 | index}, sorted: by position, then index.
     */
    private static long[] laidOutOrder(int[] positions, int m, int laidOut) {
        long[] order = new long[m];
        for (int i = 0, k = 0; i < positions.length; i++) {
            if (positions[i] < laidOut) {
                order[k++] = ((long) positions[i] << 32) | i;
            }
        }
        Arrays.sort(order);
        return order;
    }

    private static int firstIndexOf(long[] order, int token) {
        int lo = 0;
        int hi = order.length;
        long key = (long) token << 32;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (order[mid] < key) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    private static int endOfGroup(long[] order, int start) {
        int b = (int) (order[start] >>> 32);
        int j = start;
        while (j < order.length && (int) (order[j] >>> 32) == b) {
            j++;
        }
        return j;
    }

    private void copyOut(MemorySegment block, long[] order, int from, int to, int[] positions, MemorySegment keysOut,
            MemorySegment valuesOut) {
        for (int k = from; k < to; k++) {
            int idx = (int) order[k];
            long src = (long) (positions[idx] % blockTokens) * entry;
            MemorySegment.copy(block, src, keysOut, (long) idx * half, half);
            MemorySegment.copy(block, src + half, valuesOut, (long) idx * half, half);
        }
    }

    /** Reads whole blocks into slots with one batch and verifies each one's CRC32C. */
    private void readBlocksInto(int layer, int[] blockIds, DramSlot[] slots, int count) {
        IoBatch batch = readBatch();
        BlockTable t = ledger.layer(layer).blocks;
        String failed = null;
        try {
            for (int g = 0; g < count; g++) {
                int b = blockIds[g];
                if (!t.hasExtent(b)) {
                    throw new IllegalStateException("layer " + layer + " block " + b + " of sequence " + id
                            + " has no extent");
                }
                batch.addRead(t.device(b), t.offset(b), slots[g].segment().asSlice(0, t.length(b)), b);
            }
            store.execute(batch);
        } catch (KvIoException e) {
            if (!verifier.enabled()) {
                throw e;
            }
            failed = e.getMessage(); // every read has finished; the failed blocks will not verify
        } finally {
            batch.clear();
        }
        if (!verifier.enabled()) {
            return;
        }
        for (int g = 0; g < count; g++) {
            int b = blockIds[g];
            // Seeded with the block wanted, so another block's (or sequence's) intact extent fails too.
            int actual = blockChecksum(t, layer, b, slots[g]);
            if (actual != t.crc(b)) {
                // A block has one copy; a transient fault (a torn or flipped transfer, a passing EIO)
                // passes on a second read, damage on the media does not.
                actual = reread(t, layer, b, slots[g]);
                if (actual != t.crc(b) && fromRemote(t, layer, b, slots[g])) {
                    verifier.mismatch(t.device(b), layer, b * blockTokens, false);
                    verifier.verified();
                    continue;
                }
                if (actual != t.crc(b)) {
                    int from = b * blockTokens;
                    throw verifier.failure(t.device(b), layer, from,
                            Math.min(from + blockTokens, ledger.layer(layer).tokens), t.crc(b), actual);
                }
                store.stats().rereads.increment();
                LOG.warn("sequence {} layer {} block {}: the read on device {} failed ({}); a second read verified", id,
                        layer, b, t.device(b), failed != null ? failed : "checksum mismatch");
            }
            verifier.verified();
        }
    }

    /**
     * The block's only local copy failed twice: rebuilds it in {@code slot} from the remote tier's
     * copy (when the sequence published it) and uses it only if it matches the local checksum, then
     * rewrites the local extent from it. Returns whether the slot now holds the verified block.
     */
    private boolean fromRemote(BlockTable t, int layer, int b, DramSlot slot) {
        MemorySegment remote = store.remoteBlock(id, layer, b);
        if (remote == null) {
            return false;
        }
        MemorySegment buf = slot.segment().asSlice(0, t.length(b));
        buf.fill((byte) 0); // the writer pads an extent with zeros: the checksum covers them
        for (int i = 0; i < blockTokens; i++) {
            RemoteCopy.entry(remote, blockTokens, half, i, buf, (long) i * entry);
        }
        if (blockChecksum(t, layer, b, slot) != t.crc(b)) {
            LOG.warn("sequence {} layer {} block {}: the remote copy does not match the local checksum; not used", id,
                    layer, b);
            return false;
        }
        store.stats().remoteFailovers.increment();
        LOG.warn("sequence {} layer {} block {}: the copy on device {} failed twice; served from the remote tier", id,
                layer, b, t.device(b));
        IoBatch batch = readBatch;
        try {
            batch.addWrite(t.device(b), t.offset(b), buf, b);
            store.execute(batch);
            store.backend().sync(t.device(b));
            store.stats().repairs.increment();
        } catch (io.kvoffload.KvException | java.io.IOException e) {
            LOG.warn("sequence {} layer {} block {}: could not rewrite the bad copy on device {}: {}", id, layer, b,
                    t.device(b), e.toString());
        } finally {
            batch.clear();
        }
        return true;
    }

    private int blockChecksum(BlockTable t, int layer, int b, DramSlot slot) {
        // A shared (forked) block verifies with its writer's identity, the sequence's own with its own.
        return verifier.compute(t.checksum(b, checksum), EntryChecksum.Kind.BLOCK, layer, b * blockTokens,
                slot.segment().asSlice(0, t.length(b)).asByteBuffer());
    }

    /**
     * Reads block {@code b} again into {@code slot} and returns its checksum; a read that fails
     * again throws its {@link KvIoException} (the device error, not a checksum, is the cause).
     */
    private int reread(BlockTable t, int layer, int b, DramSlot slot) {
        IoBatch batch = readBatch;
        try {
            batch.addRead(t.device(b), t.offset(b), slot.segment().asSlice(0, t.length(b)), b);
            store.execute(batch);
            return blockChecksum(t, layer, b, slot);
        } finally {
            batch.clear();
        }
    }
}
