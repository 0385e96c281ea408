package io.kvoffload;

import io.kvoffload.internal.dram.DramSlot;
import io.kvoffload.internal.sched.BucketScheduler;
import io.kvoffload.internal.storage.BlockTable;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.ClusterLayoutWriter;
import io.kvoffload.internal.storage.ClusterPlan;
import io.kvoffload.internal.storage.DevicePool;
import io.kvoffload.internal.storage.EntryChecksum;
import io.kvoffload.internal.storage.GroupLayout;
import io.kvoffload.internal.storage.GroupLayoutWriter;
import io.kvoffload.internal.storage.Layout;
import io.kvoffload.internal.storage.Manifest;
import io.kvoffload.internal.storage.ReplicaFailover;
import io.kvoffload.internal.storage.Store;
import io.kvoffload.internal.swarm.Clustering;
import io.kvoffload.internal.swarm.CoActivationProfile;
import io.kvoffload.internal.kvswap.CompressedKCache;
import io.kvoffload.internal.kvswap.LowRankAdapter;
import io.kvoffload.internal.swarm.MedoidIndex;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.internal.util.SingleOwner;
import io.kvoffload.spi.IoBatch;
import io.kvoffload.workload.ElementCodec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * One context's KV cache: token ids plus, for every layer, one K and V entry per token.
 *
 * <p>Writing: {@link #appendTokens} declares new token positions (prefill chunk or one decode
 * token), then {@link #appendKv} supplies each layer's K and V for them; full blocks stream to the
 * SSDs as they fill. {@link #commit} makes everything appended so far durable and visible to
 * {@link KvEngine#openSequence} and prefix lookup, also after a restart. Reading:
 * {@link #read} gathers any set of token positions of a layer into caller buffers, from DRAM or
 * from the SSDs (verifying each extent's CRC32C).
 *
 * <p>K and V tensors are token-major: for each token {@code kvHeads × headDim} elements, head after
 * head, in the shape's dtype. A handle is used by one thread at a time; different sequences may be
 * used from different threads concurrently. Close every handle: an open sequence is never evicted.
 */
public final class KvSequence implements AutoCloseable {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(KvSequence.class);
    private static final int IO_BATCH = 64;
    /** Profiling from queries keeps a layer's keys in memory up to this size (else it streams them from the SSDs). */
    private static final long PROFILE_KEYS_IN_MEMORY = 1L << 30;

    private final KvEngine engine;
    private final Store store;
    private final String id;
    private final KvShape shape;
    private final int blockTokens;
    private final long extentBytes;
    /** The largest direct-I/O alignment among the devices: extents and reads are aligned to it. */
    private final int alignment;
    private final boolean writable;
    private final int half;
    private final int entry;

    private int[] tokenIds;
    private int tokenCount;
    private final int[] layerTokens;
    private final BlockTable[] blocks;
    private final DramSlot[] tail;
    private final boolean[] tailDirty;
    private final ClusterLayout[] clusters;
    private final boolean[] clustersCommitted;
    /** The layout the last commit named, per layer (what an uncommitted extension grew from). */
    private final ClusterLayout[] committedClusters;
    /** Whether the uncommitted layout only appended to {@link #committedClusters} (Eq. 9), sharing its extents. */
    private final boolean[] extendsCommitted;
    /** The layout each medoid index was built or extended for. */
    private final ClusterLayout[] indexLayout;
    private final GroupLayout[] groups;
    private final boolean[] groupsCommitted;
    /** The group layout the last commit named, per layer (what an uncommitted extension grew from). */
    private final GroupLayout[] committedGroups;
    /** Whether the uncommitted group layout only appended to {@link #committedGroups}, sharing its extents. */
    private final boolean[] groupsExtendCommitted;
    private BucketScheduler clusterScheduler;
    private final MedoidIndex[] medoidIndex;
    private Arena indexArena;
    private final List<long[]> superseded = new ArrayList<>();
    private final boolean[] devicesWritten;
    private boolean committed;
    private boolean dirty;
    private long commitNumber;
    private String broken;
    private boolean closed;
    /** Set by {@link #close} before it waits for the owner, so the owner's next call fails at once. */
    private volatile boolean closing;
    /** Every public entry that reads or changes state takes it: one thread at a time. */
    private final SingleOwner owner = new SingleOwner();

    private IoBatch writeBatch;
    private final DramSlot[] pendingSlots = new DramSlot[IO_BATCH];
    private final boolean[] pendingRelease = new boolean[IO_BATCH];
    private IoBatch readBatch;
    private final CRC32C crc = new CRC32C();
    private ReplicaFailover failover;
    /** How this sequence's records are checksummed: with its identity, unless first committed before manifest v5. */
    private final EntryChecksum checksum;
    private final List<KvDecoder> decoders = new ArrayList<>();

    /** A new, empty, writable sequence. */
    KvSequence(KvEngine engine, Store store, String id, KvShape shape) {
        this(engine, store, id, shape, store.config().blockTokens(), true, EntryChecksum.forSequence(id));
        this.tokenIds = new int[256];
    }

    /** A handle on a committed sequence. */
    KvSequence(KvEngine engine, Store store, Manifest m, boolean writable) {
        this(engine, store, m.id(), m.shape(), m.blockTokens(), writable, m.entryChecksum());
        this.tokenIds = m.tokenIds().clone();
        this.tokenCount = m.tokenCount();
        for (int l = 0; l < shape.layers(); l++) {
            layerTokens[l] = tokenCount;
            // A reader shares the manifest's immutable tables; a writer gets its own copy.
            blocks[l] = writable ? m.layers()[l].copy() : m.layers()[l];
            clusters[l] = m.clusters()[l];
            clustersCommitted[l] = true;
            committedClusters[l] = m.clusters()[l];
            groups[l] = m.groups()[l];
            groupsCommitted[l] = true;
            committedGroups[l] = m.groups()[l];
        }
        this.committed = true;
        this.commitNumber = m.commitNumber();
    }

    private KvSequence(KvEngine engine, Store store, String id, KvShape shape, int blockTokens, boolean writable,
            EntryChecksum checksum) {
        this.engine = engine;
        this.checksum = checksum;
        this.store = store;
        this.id = id;
        this.shape = shape;
        this.blockTokens = blockTokens;
        this.alignment = store.devices().stream().mapToInt(DevicePool::alignment).max().orElse(4096);
        this.extentBytes = Layout.extentBytes(shape, blockTokens, alignment);
        this.writable = writable;
        this.half = shape.halfEntryBytes();
        this.entry = shape.entryBytes();
        this.layerTokens = new int[shape.layers()];
        this.blocks = new BlockTable[shape.layers()];
        for (int l = 0; l < blocks.length; l++) {
            blocks[l] = new BlockTable(16);
        }
        this.tail = new DramSlot[shape.layers()];
        this.tailDirty = new boolean[shape.layers()];
        this.clusters = new ClusterLayout[shape.layers()];
        this.clustersCommitted = new boolean[shape.layers()];
        this.committedClusters = new ClusterLayout[shape.layers()];
        this.extendsCommitted = new boolean[shape.layers()];
        this.indexLayout = new ClusterLayout[shape.layers()];
        this.groups = new GroupLayout[shape.layers()];
        this.groupsCommitted = new boolean[shape.layers()];
        this.committedGroups = new GroupLayout[shape.layers()];
        this.groupsExtendCommitted = new boolean[shape.layers()];
        this.medoidIndex = new MedoidIndex[shape.layers()];
        this.devicesWritten = new boolean[store.devices().size()];
    }

    /** Largest block extent the engine accepts: a quarter of the DRAM budget, at most 1 GiB. */
    static long maxExtentBytes(Store store) {
        return Math.min(1L << 30, store.config().dramBudgetBytes() / 4);
    }

    public String id() {
        return id;
    }

    public KvShape shape() {
        return shape;
    }

    /** Tokens per block (the unit of placement, I/O and checksums) of this sequence. */
    public int blockTokens() {
        return blockTokens;
    }

    /** Token positions declared with {@link #appendTokens}. */
    public int tokenCount() {
        return tokenCount;
    }

    /** Tokens whose KV has been appended for {@code layer}. */
    public int tokenCount(int layer) {
        Checks.index("layer", layer, shape.layers());
        return layerTokens[layer];
    }

    /** A copy of the token ids. */
    public int[] tokenIds() {
        return Arrays.copyOf(tokenIds, tokenCount);
    }

    public boolean isWritable() {
        return writable;
    }

    /** Whether the last {@link #commit} covers everything appended. */
    public boolean isCommitted() {
        return committed && !dirty;
    }

    // ------------------------------------------------------------------ writing

    /**
     * Declares new token positions with their token ids (a prefill chunk or one decode token).
     * Their KV follows per layer through {@link #appendKv}.
     */
    public void appendTokens(int... ids) {
        boolean owned = owner.enter(this);
        try {
            checkWritable();
            Checks.notNull("ids", ids);
            for (int i = 0; i < ids.length; i++) {
                if (ids[i] < 0) {
                    throw new IllegalArgumentException("ids[" + i + "] = " + ids[i] + " is not a token id; allowed: 0.."
                            + Integer.MAX_VALUE);
                }
            }
            if ((long) tokenCount + ids.length > Integer.MAX_VALUE - 8) {
                throw new IllegalArgumentException("appending " + ids.length + " tokens to " + tokenCount
                        + " exceeds the maximum sequence length " + (Integer.MAX_VALUE - 8));
            }
            if (tokenCount + ids.length > tokenIds.length) {
                tokenIds = Arrays.copyOf(tokenIds, Math.max(tokenCount + ids.length, tokenIds.length * 2));
            }
            System.arraycopy(ids, 0, tokenIds, tokenCount, ids.length);
            tokenCount += ids.length;
            if (ids.length > 0) {
                dirty = true;
            }
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    /**
     * Appends K and V of the next tokens of {@code layer}. Both segments hold the same number of
     * tokens, {@code kvHeads × headDim} elements each, in the shape's dtype.
     */
    public void appendKv(int layer, MemorySegment keys, MemorySegment values) {
        boolean owned = owner.enter(this);
        try {
            checkWritable();
            Checks.index("layer", layer, shape.layers());
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
            if (layerTokens[layer] + n > tokenCount) {
                throw new IllegalArgumentException("layer " + layer + " would hold " + (layerTokens[layer] + n)
                        + " tokens but only " + tokenCount + " token ids were appended; call appendTokens first"
                        + " (allowed: at most " + (tokenCount - layerTokens[layer]) + " more tokens for this layer)");
            }
            append(layer, keys, values, (int) n);
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    /** {@link #appendKv(int, MemorySegment, MemorySegment)} for F32 sequences. */
    public void appendKv(int layer, float[] keys, float[] values) {
        requireDType("keys", "float[]", DType.F32);
        appendKv(layer, MemorySegment.ofArray(Checks.notNull("keys", keys)),
                MemorySegment.ofArray(Checks.notNull("values", values)));
    }

    /** {@link #appendKv(int, MemorySegment, MemorySegment)} for F16 and BF16 sequences (raw bit patterns). */
    public void appendKv(int layer, short[] keys, short[] values) {
        requireDType("keys", "short[]", DType.F16, DType.BF16);
        appendKv(layer, MemorySegment.ofArray(Checks.notNull("keys", keys)),
                MemorySegment.ofArray(Checks.notNull("values", values)));
    }

    private void requireDType(String arg, String javaType, DType... allowed) {
        for (DType d : allowed) {
            if (shape.dtype() == d) {
                return;
            }
        }
        throw new IllegalArgumentException(arg + " is " + javaType + " but the sequence's dtype is " + shape.dtype()
                + "; allowed for " + javaType + ": " + Arrays.toString(allowed) + " (or pass a MemorySegment)");
    }

    private void append(int layer, MemorySegment keys, MemorySegment values, int n) {
        int done = 0;
        try {
            while (done < n) {
                int t = layerTokens[layer];
                int b = t / blockTokens;
                int inBlock = t % blockTokens;
                DramSlot slot = tail[layer];
                if (slot == null) {
                    slot = store.dram().acquire(extentBytes);
                    tail[layer] = slot;
                    if (inBlock > 0) {
                        // Reopened sequence whose last block is partial: bring it back before extending it.
                        readBlocksInto(layer, new int[] {b}, new DramSlot[] {slot}, 1);
                    }
                }
                int take = Math.min(blockTokens - inBlock, n - done);
                MemorySegment dst = slot.segment();
                for (int i = 0; i < take; i++) {
                    long eo = (long) (inBlock + i) * entry;
                    MemorySegment.copy(keys, (long) (done + i) * half, dst, eo, half);
                    MemorySegment.copy(values, (long) (done + i) * half, dst, eo + half, half);
                }
                layerTokens[layer] += take;
                done += take;
                tailDirty[layer] = true;
                dirty = true;
                if (inBlock + take == blockTokens) {
                    tail[layer] = null;
                    seal(layer, b, slot, blockTokens, true);
                }
            }
        } finally {
            flushWrites();
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
        BlockTable t = blocks[layer];
        if (t.hasExtent(b)) {
            retire(t, b);
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
            flushWrites();
        }
    }

    /** An extent replaced by a newer copy: free now if no manifest names it, else after the next commit. */
    private void retire(BlockTable t, int b) {
        if (t.committed(b)) {
            superseded.add(new long[] {t.device(b), t.offset(b), t.length(b)});
        } else {
            store.free(t.device(b), t.offset(b), t.length(b));
        }
    }

    private void flushWrites() {
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
                        BlockTable t = blocks[layer];
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

    /**
     * Makes everything appended so far durable: partial last blocks are written, the devices are
     * synced, and a new manifest atomically replaces the previous one. After a crash at any point
     * the sequence is either in its previous committed state or in this one.
     *
     * @throws IllegalStateException if a layer lacks KV for some token, or nothing changed since the
     *     last commit
     */
    public void commit() {
        boolean owned = owner.enter(this);
        try {
            checkWritable();
            checkNoFetchInFlight("commit");
            if (!dirty) {
                throw new IllegalStateException("sequence " + id + " has nothing to commit: it was already committed at "
                        + tokenCount + " tokens and nothing was appended since");
            }
            for (int l = 0; l < layerTokens.length; l++) {
                if (layerTokens[l] != tokenCount) {
                    throw new IllegalStateException("cannot commit sequence " + id + ": layer " + l + " holds KV for "
                            + layerTokens[l] + " of " + tokenCount + " tokens; append every layer's KV first");
                }
            }
            if (tokenCount == 0) {
                throw new IllegalStateException("cannot commit sequence " + id + ": it holds no tokens");
            }
            try {
                for (int l = 0; l < tail.length; l++) {
                    if (tail[l] != null && tailDirty[l]) {
                        seal(l, layerTokens[l] / blockTokens, tail[l], layerTokens[l] % blockTokens, false);
                    }
                }
                flushWrites();
                for (int d = 0; d < devicesWritten.length; d++) {
                    if (devicesWritten[d]) {
                        store.backend().sync(d);
                        devicesWritten[d] = false;
                    }
                }
                BlockTable[] snapshot = new BlockTable[blocks.length];
                for (int l = 0; l < blocks.length; l++) {
                    snapshot[l] = blocks[l].copy();
                    snapshot[l].markAllCommitted();
                }
                Manifest m = new Manifest(id, shape, blockTokens, store.deviceUuids(), Arrays.copyOf(tokenIds, tokenCount),
                        snapshot, clusters.clone(), groups.clone(), System.currentTimeMillis(), commitNumber + 1,
                        checksum.salted());
                store.commit(m, superseded);
            } catch (IOException e) {
                throw new UncheckedIOException("commit of sequence " + id + " failed; its previous commit is intact", e);
            }
            commitNumber++;
            superseded.clear();
            for (BlockTable t : blocks) {
                t.markAllCommitted();
            }
            Arrays.fill(clustersCommitted, true);
            System.arraycopy(clusters, 0, committedClusters, 0, clusters.length);
            Arrays.fill(extendsCommitted, false);
            Arrays.fill(groupsCommitted, true);
            System.arraycopy(groups, 0, committedGroups, 0, groups.length);
            Arrays.fill(groupsExtendCommitted, false);
            Arrays.fill(tailDirty, false);
            dirty = false;
            committed = true;
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    // ------------------------------------------------------------------ cluster layout

    /**
     * Lays tokens {@code [0, plan.clusteredTokens())} of {@code layer} out by cluster (Swarm §5.2):
     * each cluster's share of each device becomes one extent, replicas are physical copies, every
     * entry gets a CRC32C. The layer's block extents that the clusters now cover are released after
     * the next {@link #commit} (until then the previous commit still names them).
     */
    void applyClusterPlan(int layer, ClusterPlan plan) {
        checkWritable();
        Checks.index("layer", layer, shape.layers());
        Checks.inRange("plan.clusteredTokens()", plan.clusteredTokens(), 1, layerTokens[layer]);
        flushWrites();
        ClusterLayout layout = ClusterLayoutWriter.write(store, id, checksum, layer, shape, plan,
                (positions, k, v) -> read(layer, positions, k, v));
        ClusterLayout old = clusters[layer];
        if (old != null) {
            if (clustersCommitted[layer]) {
                supersede(old, null);
            } else if (extendsCommitted[layer]) {
                supersede(committedClusters[layer], null);
                freeSegments(old, old.segmentsAddedSince(committedClusters[layer]));
            } else {
                freeSegments(old);
            }
        }
        clusters[layer] = layout;
        clustersCommitted[layer] = false;
        extendsCommitted[layer] = false;
        dropGroupLayout(layer);
        retireClusteredBlocks(layer, layout);
        dirty = true;
    }

    /**
     * Online maintenance (Swarm Eq. 9) grew the layer's clusters: {@code grown} extends the current
     * layout with appended entries (and new clusters) and shares all its extents. Blocks whose
     * tokens are now all clustered are retired; {@link #commit} persists the grown layout.
     */
    void extendClusters(int layer, ClusterLayout grown) {
        checkWritable();
        ClusterLayout old = clusters[layer];
        if (old == null || grown.clusteredTokens() < old.clusteredTokens() || grown.clusterCount() < old.clusterCount()) {
            throw new IllegalStateException("layout of layer " + layer + " does not extend the current one");
        }
        if (clustersCommitted[layer]) {
            extendsCommitted[layer] = true;
        }
        clusters[layer] = grown;
        clustersCommitted[layer] = false;
        retireClusteredBlocks(layer, grown);
        dirty = true;
    }

    /** Installs a medoid index the decoder extended for {@code layout} (so it is not rebuilt from the SSDs). */
    void installMedoidIndex(int layer, MedoidIndex index, ClusterLayout layout) {
        medoidIndex[layer] = index;
        indexLayout[layer] = layout;
    }

    private void supersede(ClusterLayout c, int[] segments) {
        int n = segments == null ? c.segmentCount() : segments.length;
        for (int i = 0; i < n; i++) {
            int s = segments == null ? i : segments[i];
            superseded.add(new long[] {c.segmentDevice(s), c.segmentOffset(s), c.segmentLength(s)});
        }
    }

    private void freeSegments(ClusterLayout c, int[] segments) {
        for (int s : segments) {
            store.free(c.segmentDevice(s), c.segmentOffset(s), c.segmentLength(s));
        }
    }

    private void retireClusteredBlocks(int layer, ClusterLayout layout) {
        BlockTable t = blocks[layer];
        for (int b = 0; b < t.size() && (long) (b + 1) * blockTokens <= layout.clusteredTokens(); b++) {
            if (t.hasExtent(b)) {
                retire(t, b);
                t.clear(b);
            }
        }
    }

    /**
     * Swarm's offline phase for {@code layer}, from activation sets the engine observed: for each
     * profiled query (e.g. sampled prefill queries), the token positions it activated (its top-k).
     * Clusters co-activated tokens (Algorithm 1), spreads every cluster over all SSDs (Eq. 7), writes
     * one extent per cluster per SSD and builds the DRAM medoid index. {@link #commit} persists it.
     *
     * @param activationSets 1..{@value io.kvoffload.internal.swarm.CoActivationProfile#MAX_QUERIES}
     *     sets of positions in {@code 0..tokenCount(layer)-1}
     */
    public ClusterSummary clusterLayer(int layer, List<int[]> activationSets, ClusterOptions options) {
        boolean owned = owner.enter(this);
        try {
            checkWritable();
            Checks.index("layer", layer, shape.layers());
            Checks.notNull("activationSets", activationSets);
            Checks.notNull("options", options);
            long t0 = System.nanoTime();
            CoActivationProfile profile = SwarmOfflinePhase.fromActivationSets(layerTokens[layer], activationSets, options);
            return build(layer, SwarmOfflinePhase.cluster(profile, options), options.placement(), t0);
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    /**
     * Swarm's offline phase for {@code layer} from queries: the library computes each query's exact
     * top activations ({@code options.sparsity()} of the tokens; sinks and the local window excluded)
     * over the stored keys, then clusters as {@link #clusterLayer(int, List, ClusterOptions)} does.
     *
     * @param queries each {@code queryHeads × headDim} floats, head after head
     */
    public ClusterSummary clusterLayerFromQueries(int layer, List<float[]> queries, ClusterOptions options) {
        boolean owned = owner.enter(this);
        try {
            checkWritable();
            Checks.index("layer", layer, shape.layers());
            Checks.notNull("queries", queries);
            Checks.notNull("options", options);
            long t0 = System.nanoTime();
            CoActivationProfile profile;
            try (SequenceLayerKv kv = new SequenceLayerKv(this, layer, layerTokens[layer]).keysInMemory(PROFILE_KEYS_IN_MEMORY)) {
                profile = SwarmOfflinePhase.fromQueries(kv, queries, shape.queryHeads(), options);
            }
            return build(layer, SwarmOfflinePhase.cluster(profile, options), options.placement(), t0);
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    /**
     * Lays {@code layer} out by clusters the caller chose (e.g. fixed positional groups for engines
     * that select single tokens, or a clustering computed elsewhere): cluster {@code c} holds the
     * token positions {@code clusters[c]}, its first element is its medoid (what the decoder's
     * medoid index scores), and its members are placed over the SSDs in the given order by
     * {@code options.placement()} (Eq. 7 round robin by default). A token may appear in several
     * clusters (a replica, stored once per cluster). Other options are not used. Every entry gets a
     * CRC32C and the DRAM medoid index is built, as for {@link #clusterLayer(int, List, ClusterOptions)};
     * {@link #commit} persists it.
     *
     * @param clusters 1..2^30 non-empty clusters of distinct positions in {@code 0..tokenCount(layer)-1},
     *     together covering every one of them
     */
    public ClusterSummary clusterLayer(int layer, int[][] clusters, ClusterOptions options) {
        boolean owned = owner.enter(this);
        try {
            checkWritable();
            Checks.index("layer", layer, shape.layers());
            Checks.notNull("clusters", clusters);
            Checks.notNull("options", options);
            long t0 = System.nanoTime();
            return build(layer, SwarmOfflinePhase.fromClusters(layerTokens[layer], clusters, options), options.placement(),
                    t0);
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    private ClusterSummary build(int layer, Clustering clustering, ClusterOptions.Placement placement, long t0) {
        long t1 = System.nanoTime();
        applyClusterPlan(layer, SwarmOfflinePhase.plan(clustering, store.devices().size(), placement));
        long t2 = System.nanoTime();
        ClusterLayout cl = clusters[layer];
        MedoidIndex index = medoidIndex(layer);
        return new ClusterSummary(layer, cl.clusteredTokens(), cl.clusterCount(), cl.coActivationClusters(),
                (double) cl.storedEntries() / cl.clusterCount(), (double) cl.storedEntries() / cl.clusteredTokens(),
                cl.tau(), (t1 - t0) / 1_000_000, (t2 - t1) / 1_000_000, index.memoryBytes(), cl.memoryBytes());
    }

    /** Clusters of {@code layer} (0 if it is not clustered). */
    public int clusterCount(int layer) {
        checkOpen();
        Checks.index("layer", layer, shape.layers());
        return clusters[layer] == null ? 0 : clusters[layer].clusterCount();
    }

    /** Token positions of a cluster of {@code layer}, in storage order. */
    public int[] clusterMembers(int layer, int cluster) {
        checkOpen();
        Checks.index("layer", layer, shape.layers());
        ClusterLayout cl = clusters[layer];
        Checks.index("cluster", cluster, cl == null ? 0 : cl.clusterCount());
        return cl.members(cluster);
    }

    /** The medoid (representative token) of a cluster of {@code layer}. */
    public int clusterMedoid(int layer, int cluster) {
        checkOpen();
        Checks.index("layer", layer, shape.layers());
        ClusterLayout cl = clusters[layer];
        Checks.index("cluster", cluster, cl == null ? 0 : cl.clusterCount());
        return cl.medoid(cluster);
    }

    /**
     * The layer's DRAM medoid index, built on first use (after a restart, from the persisted
     * clustering and the medoids' keys read back from the SSDs).
     */
    MedoidIndex medoidIndex(int layer) {
        ClusterLayout cl = clusters[layer];
        if (cl == null) {
            throw new IllegalStateException("layer " + layer + " of sequence " + id + " is not clustered; call"
                    + " clusterLayer first");
        }
        MedoidIndex index = medoidIndex[layer];
        if (index == null || indexLayout[layer] != cl) {
            if (indexArena == null) {
                indexArena = Arena.ofShared();
            }
            try (SequenceLayerKv kv = new SequenceLayerKv(this, layer, cl.clusteredTokens()).keysOf(cl.medoids())) {
                index = MedoidIndex.build(SwarmOfflinePhase.restore(cl), kv, shape.queryHeads(), indexArena);
            }
            medoidIndex[layer] = index;
            indexLayout[layer] = cl;
        }
        return index;
    }

    private void freeSegments(ClusterLayout c) {
        for (int s = 0; s < c.segmentCount(); s++) {
            store.free(c.segmentDevice(s), c.segmentOffset(s), c.segmentLength(s));
        }
    }

    /** The layer's cluster layout, or null. */
    ClusterLayout clusterLayout(int layer) {
        Checks.index("layer", layer, shape.layers());
        return clusters[layer];
    }

    // ------------------------------------------------------------------ group layout (KVSwap)

    /**
     * KVSwap's offline phase for {@code layer} (papers/003 §3.2–3.4): fits the layer's low-rank K
     * adapter (SVD of up to {@code options.calibrationRows()} of its own stored keys) and lays tokens
     * {@code [0, ⌊tokens / G⌋·G)} out in groups of G: each group one aligned region
     * {@code [K of G tokens | V of G tokens]} with its CRC32C, groups round-robin over the SSDs. The
     * last partial group stays in the block layout (a decoder keeps it in DRAM, the rolling buffer).
     * {@link #commit} persists the layout and the adapter; a decoder with
     * {@link DecodeOptions.Selector#KVSWAP} then predicts and fetches groups. A cluster or group
     * layout the layer had is replaced; the block extents the groups now cover are released after
     * the next commit.
     *
     * @throws IllegalArgumentException if the layer holds fewer than G tokens, or the rank exceeds
     *     {@code kvHeads × headDim}
     */
    public GroupSummary groupLayer(int layer, GroupOptions options) {
        boolean owned = owner.enter(this);
        try {
            checkWritable();
            Checks.index("layer", layer, shape.layers());
            Checks.notNull("options", options);
            int tokens = layerTokens[layer];
            int g = options.groupSize();
            if (g > tokens) {
                throw new IllegalArgumentException("options.groupSize() = " + g + " is out of range for layer " + layer
                        + ", which holds " + tokens + " tokens; allowed: 1.." + Math.max(1, tokens));
            }
            int rank = options.rankFor(shape);
            int grouped = tokens / g * g;
            BlockTable t = blocks[layer];
            for (int b = 0; b < t.size(); b++) {
                if (!t.hasExtent(b) && (long) (b + 1) * blockTokens > grouped) {
                    throw new IllegalArgumentException("options.groupSize() = " + g + " would lay out only " + grouped
                            + " tokens of layer " + layer + ", but its current layout already covers block " + b
                            + "; allowed: a group size that covers at least " + (long) (b + 1) * blockTokens + " tokens");
                }
            }
            checkNoFetchInFlight("re-lay out");
            flushWrites();
            long t0 = System.nanoTime();
            LowRankAdapter adapter = fitAdapter(layer, tokens, rank, options.calibrationRows(), options.seed());
            long t1 = System.nanoTime();
            GroupLayout layout = GroupLayoutWriter.write(store, id, checksum, layer, shape, g, grouped, adapter,
                    (positions, k, v) -> read(layer, positions, k, v));
            long t2 = System.nanoTime();
            dropGroupLayout(layer);
            ClusterLayout old = clusters[layer];
            if (old != null) {
                if (clustersCommitted[layer]) {
                    for (int s = 0; s < old.segmentCount(); s++) {
                        superseded.add(new long[] {old.segmentDevice(s), old.segmentOffset(s), old.segmentLength(s)});
                    }
                } else {
                    freeSegments(old);
                }
                clusters[layer] = null;
                medoidIndex[layer] = null;
            }
            groups[layer] = layout;
            groupsCommitted[layer] = false;
            for (int b = 0; b < t.size() && (long) (b + 1) * blockTokens <= grouped; b++) {
                if (t.hasExtent(b)) {
                    retire(t, b);
                    t.clear(b);
                }
            }
            dirty = true;
            return new GroupSummary(layer, grouped, layout.groupCount(), g, adapter.rank(), adapter.compressionRatio(),
                    adapter.retainedEnergy(), layout.stride(), CompressedKCache.bytesFor(grouped, adapter.rank(), DType.F16),
                    (t1 - t0) / 1_000_000, (t2 - t1) / 1_000_000);
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    /** Fits the adapter on up to {@code maxRows} stored keys of the layer, sampled uniformly in position order. */
    private LowRankAdapter fitAdapter(int layer, int tokens, int rank, int maxRows, long seed) {
        int rows = Math.min(tokens, maxRows);
        int[] sample = new int[rows];
        // Selection sampling (Knuth's Algorithm S): a uniform subset, already in position order.
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(seed);
        for (int p = 0, k = 0; p < tokens && k < rows; p++) {
            if (rnd.nextInt(tokens - p) < rows - k) {
                sample[k++] = p;
            }
        }
        LowRankAdapter.Calibration cal = LowRankAdapter.calibration(shape.kvHeads(), shape.headDim());
        int elements = shape.elementsPerToken();
        int chunk = 2048;
        float[] f = new float[chunk * elements];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment k = arena.allocate((long) chunk * half, 64);
            MemorySegment v = arena.allocate((long) chunk * half, 64);
            for (int from = 0; from < rows; from += chunk) {
                int n = Math.min(chunk, rows - from);
                read(layer, Arrays.copyOfRange(sample, from, from + n), k, v);
                ElementCodec.read(shape.dtype(), k, 0, f, 0, n * elements);
                cal.add(f, 0, n);
            }
        }
        return cal.fit(rank);
    }

    /**
     * The layer's compressed K cache, rebuilt from its stored (CRC-checked) keys through the
     * persisted adapter: tokens {@code [0, groupedTokens)}. Rebuilt rather than persisted: it costs
     * one pass over the layer, like the prefill that produced it, and always matches the stored keys.
     */
    CompressedKCache compressedKeys(int layer, DType storage, int expectedTokens) {
        GroupLayout gl = groups[layer];
        if (gl == null) {
            throw new IllegalStateException("layer " + layer + " of sequence " + id + " has no group layout; call"
                    + " groupLayer first");
        }
        int grouped = gl.groupedTokens();
        CompressedKCache cache = new CompressedKCache(gl.adapter(), storage, Math.max(grouped, expectedTokens));
        int elements = shape.elementsPerToken();
        int chunk = 2048;
        float[] f = new float[chunk * elements];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment k = arena.allocate((long) chunk * half, 64);
            MemorySegment v = arena.allocate((long) chunk * half, 64);
            for (int from = 0; from < grouped; from += chunk) {
                int n = Math.min(chunk, grouped - from);
                read(layer, from, n, k, v);
                ElementCodec.read(shape.dtype(), k, 0, f, 0, n * elements);
                cache.append(f, 0, n);
            }
        }
        return cache;
    }

    /** The layer's group layout, or null. */
    GroupLayout groupLayout(int layer) {
        Checks.index("layer", layer, shape.layers());
        return groups[layer];
    }

    /** Groups of {@code layer} (0 if it has no group layout). */
    public int groupCount(int layer) {
        checkOpen();
        Checks.index("layer", layer, shape.layers());
        return groups[layer] == null ? 0 : groups[layer].groupCount();
    }

    /** Forgets the layer's group layout: its extents are freed now, or after the next commit if one names them. */
    private void dropGroupLayout(int layer) {
        GroupLayout old = groups[layer];
        if (old == null) {
            return;
        }
        if (groupsCommitted[layer]) {
            supersedeGroupSegments(old, old.segmentCount());
        } else if (groupsExtendCommitted[layer]) {
            // The last commit names the shared prefix; only the appended segments are this session's own.
            GroupLayout base = committedGroups[layer];
            supersedeGroupSegments(base, base.segmentCount());
            freeGroupSegments(old, base.segmentCount());
        } else {
            freeGroupSegments(old, 0);
        }
        groups[layer] = null;
        groupsExtendCommitted[layer] = false;
    }

    private void supersedeGroupSegments(GroupLayout g, int end) {
        for (int s = 0; s < end; s++) {
            superseded.add(new long[] {g.segmentDevice(s), g.segmentOffset(s), g.segmentLength(s)});
        }
    }

    /** Frees segments {@code [from, segmentCount)} of {@code g}. */
    private void freeGroupSegments(GroupLayout g, int from) {
        for (int s = from; s < g.segmentCount(); s++) {
            store.free(g.segmentDevice(s), g.segmentOffset(s), g.segmentLength(s));
        }
    }

    /**
     * KVSwap's rolling buffer flushed full groups: {@code grown} appends groups to the layer's
     * current group layout ({@link GroupLayoutWriter#append}) and shares all its extents. Blocks
     * whose tokens are now all grouped are retired; {@link #commit} persists the grown layout, and a
     * close without commit frees only the appended segments.
     */
    void extendGroups(int layer, GroupLayout grown) {
        checkWritable();
        GroupLayout old = groups[layer];
        if (old == null || !grown.extendsLayout(old)) {
            throw new IllegalStateException("group layout of layer " + layer + " (" + grown.groupedTokens()
                    + " tokens) does not extend the current one (" + (old == null ? 0 : old.groupedTokens())
                    + " tokens)");
        }
        if (groupsCommitted[layer]) {
            groupsExtendCommitted[layer] = true;
        }
        groups[layer] = grown;
        groupsCommitted[layer] = false;
        flushWrites(); // a block about to be retired may still have its write queued
        BlockTable t = blocks[layer];
        for (int b = 0; b < t.size() && (long) (b + 1) * blockTokens <= grown.groupedTokens(); b++) {
            if (t.hasExtent(b)) {
                retire(t, b);
                t.clear(b);
            }
        }
        dirty = true;
    }

    /**
     * Reads grouped tokens: each distinct group once (one aligned read of its stride), up to
     * {@value #IO_BATCH} groups per submission; each group is checked against its CRC32C, then its
     * tokens are copied to every output index that asked for them.
     */
    private void gatherGrouped(int layer, GroupLayout gl, int[] positions, int m, MemorySegment keysOut,
            MemorySegment valuesOut) {
        long[] order = new long[m];
        for (int i = 0, k = 0; i < positions.length; i++) {
            if (positions[i] < gl.groupedTokens()) {
                order[k++] = ((long) positions[i] << 32) | i;
            }
        }
        Arrays.sort(order);
        int g = gl.groupSize();
        int stride = gl.stride();
        int data = gl.groupBytes();
        if (readBatch == null) {
            readBatch = store.backend().newBatch(IO_BATCH);
        }
        IoBatch batch = readBatch;
        DramSlot staging = store.dram().acquire((long) IO_BATCH * stride);
        int[] groupAt = new int[IO_BATCH];
        int[] firstAt = new int[IO_BATCH];
        try {
            MemorySegment mem = staging.segment();
            int q = 0;
            while (q < m) {
                int n = 0;
                while (q < m && n < IO_BATCH) {
                    int grp = (int) (order[q] >>> 32) / g;
                    groupAt[n] = grp;
                    firstAt[n] = q;
                    batch.addRead(gl.groupDevice(grp), gl.groupOffset(grp), mem, (long) n * stride, stride, grp);
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
                    long base = (long) i * stride;
                    if (store.config().checksums()) {
                        int actual = checksum.compute(crc, EntryChecksum.Kind.GROUP, layer, grp * g,
                                mem.asSlice(base, data).asByteBuffer());
                        if (actual != gl.groupCrc(grp)) {
                            store.stats().checksumFailures.increment();
                            int dev = gl.groupDevice(grp);
                            throw new KvChecksumException(dev, store.devices().get(dev).directory().toString(), id,
                                    layer, grp * g, grp * g + g, gl.groupCrc(grp), actual);
                        }
                        store.stats().checksumsVerified.increment();
                    }
                    int end = i + 1 < n ? firstAt[i + 1] : q;
                    for (int k = firstAt[i]; k < end; k++) {
                        int idx = (int) order[k];
                        int inGroup = (int) (order[k] >>> 32) - grp * g;
                        MemorySegment.copy(mem, base + (long) inGroup * half, keysOut, (long) idx * half, half);
                        MemorySegment.copy(mem, base + (long) (g + inGroup) * half, valuesOut, (long) idx * half,
                                half);
                    }
                }
            }
        } finally {
            store.dram().release(staging);
        }
    }

    // ------------------------------------------------------------------ reading

    /**
     * Gathers the K and V of {@code positions} (any order, repeats allowed) of {@code layer} into
     * {@code keysOut} and {@code valuesOut}, token-major in the order given. Data comes from DRAM
     * when the block is still there, else from the SSDs, each extent checked against its CRC32C.
     *
     * @throws KvChecksumException if an extent read back does not match its checksum
     */
    public void read(int layer, int[] positions, MemorySegment keysOut, MemorySegment valuesOut) {
        boolean owned = owner.enter(this);
        try {
            checkOpen();
            Checks.index("layer", layer, shape.layers());
            Checks.notNull("positions", positions);
            int limit = layerTokens[layer];
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
            gather(layer, positions, keysOut, valuesOut);
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    /** Reads tokens {@code [from, from + count)} of {@code layer}. */
    public void read(int layer, int from, int count, MemorySegment keysOut, MemorySegment valuesOut) {
        boolean owned = owner.enter(this);
        try {
            checkOpen();
            Checks.index("layer", layer, shape.layers());
            int limit = layerTokens[layer];
            Checks.inRange("from", from, 0, limit);
            Checks.inRange("count", count, 0, limit - from);
            int[] positions = new int[count];
            for (int i = 0; i < count; i++) {
                positions[i] = from + i;
            }
            read(layer, positions, keysOut, valuesOut);
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    /** {@link #read(int, int[], MemorySegment, MemorySegment)} into arrays, for F32 sequences. */
    public void read(int layer, int[] positions, float[] keysOut, float[] valuesOut) {
        boolean owned = owner.enter(this);
        try {
            requireDType("keysOut", "float[]", DType.F32);
            read(layer, positions, MemorySegment.ofArray(Checks.notNull("keysOut", keysOut)),
                    MemorySegment.ofArray(Checks.notNull("valuesOut", valuesOut)));
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    /** {@link #read(int, int[], MemorySegment, MemorySegment)} into arrays, for F16/BF16 sequences. */
    public void read(int layer, int[] positions, short[] keysOut, short[] valuesOut) {
        boolean owned = owner.enter(this);
        try {
            requireDType("keysOut", "short[]", DType.F16, DType.BF16);
            read(layer, positions, MemorySegment.ofArray(Checks.notNull("keysOut", keysOut)),
                    MemorySegment.ofArray(Checks.notNull("valuesOut", valuesOut)));
        } finally {
            if (owned) {
                owner.exit();
            }
        }
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

    private void gather(int layer, int[] positions, MemorySegment keysOut, MemorySegment valuesOut) {
        ClusterLayout cl = clusters[layer];
        GroupLayout gl = groups[layer];
        int clustered = cl != null ? cl.clusteredTokens() : gl != null ? gl.groupedTokens() : 0;
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
        int tailBlock = tail[layer] != null ? layerTokens[layer] / blockTokens : -1;
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
                        copyOut(tail[layer].segment(), order, i, j, positions, keysOut, valuesOut);
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
            for (DramSlot s : staging) {
                if (s != null) {
                    store.dram().release(s);
                }
            }
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
        long[] order = new long[m];
        for (int i = 0, k = 0; i < positions.length; i++) {
            if (positions[i] < cl.clusteredTokens()) {
                order[k++] = ((long) positions[i] << 32) | i;
            }
        }
        Arrays.sort(order);
        int[] tokens = new int[m];
        int u = 0;
        for (int k = 0; k < m; k++) {
            int t = (int) (order[k] >>> 32);
            if (u == 0 || tokens[u - 1] != t) {
                tokens[u++] = t;
            }
        }
        int align = alignment;
        if (clusterScheduler == null) {
            clusterScheduler = new BucketScheduler(store.devices().size(), entry, Math.max(1, (256 << 10) / entry),
                    BucketScheduler.Mode.SWARM);
        }
        BucketScheduler sched = clusterScheduler;
        sched.plan(tokens, u, cl, null);
        if (readBatch == null) {
            readBatch = store.backend().newBatch(IO_BATCH);
        }
        IoBatch batch = readBatch;
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
                    if (!store.config().checksums()) {
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
            for (DramSlot s : slots) {
                if (s != null) {
                    store.dram().release(s);
                }
            }
        }
    }

    private void copyRun(int layer, ClusterLayout cl, BucketScheduler sched, int r, MemorySegment staged, int align,
            long[] order, MemorySegment keysOut, MemorySegment valuesOut, String ioFailure) {
        int dev = sched.runDevice(r);
        long runStart = sched.runOffset(r);
        long base = runStart & -(long) align;
        for (int k = 0; k < sched.runEntries(r); k++) {
            int token = sched.plannedEntries()[sched.runFirst(r) + k];
            long off = runStart + (long) k * entry;
            MemorySegment src = staged.asSlice(off - base, entry);
            if (store.config().checksums()) {
                int e = cl.entryAt(token, dev, off);
                int actual = checksum.compute(crc, EntryChecksum.Kind.ENTRY, layer, token, src.asByteBuffer());
                if (actual != cl.entryCrc(e)) {
                    // Another copy, if the token has one, serves the read and repairs this one.
                    failover().recover(cl, layer, token, dev, off, ioFailure != null ? "the batch failed: " + ioFailure
                            : "checksum mismatch", staged, off - base);
                } else {
                    store.stats().checksumsVerified.increment();
                }
            }
            // Every output index that asked for this token (positions may repeat).
            int lo = firstIndexOf(order, token);
            for (int q = lo; q < order.length && (int) (order[q] >>> 32) == token; q++) {
                int idx = (int) order[q];
                MemorySegment.copy(src, 0, keysOut, (long) idx * half, half);
                MemorySegment.copy(src, half, valuesOut, (long) idx * half, half);
            }
        }
    }

    private ReplicaFailover failover() {
        if (failover == null) {
            failover = new ReplicaFailover(store, checksum, id, entry);
        }
        return failover;
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
        if (readBatch == null) {
            readBatch = store.backend().newBatch(IO_BATCH);
        }
        IoBatch batch = readBatch;
        BlockTable t = blocks[layer];
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
            if (!store.config().checksums()) {
                throw e;
            }
            failed = e.getMessage(); // every read has finished; the failed blocks will not verify
        } finally {
            batch.clear();
        }
        if (!store.config().checksums()) {
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
                if (actual != t.crc(b)) {
                    store.stats().checksumFailures.increment();
                    int d = t.device(b);
                    int from = b * blockTokens;
                    throw new KvChecksumException(d, store.devices().get(d).directory().toString(), id, layer, from,
                            Math.min(from + blockTokens, layerTokens[layer]), t.crc(b), actual);
                }
                store.stats().rereads.increment();
                LOG.warn("sequence {} layer {} block {}: the read on device {} failed ({}); a second read verified", id,
                        layer, b, t.device(b), failed != null ? failed : "checksum mismatch");
            }
            store.stats().checksumsVerified.increment();
        }
    }

    private int blockChecksum(BlockTable t, int layer, int b, DramSlot slot) {
        return checksum.compute(crc, EntryChecksum.Kind.BLOCK, layer, b * blockTokens,
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

    // ------------------------------------------------------------------ decoding

    /**
     * A decoder for this sequence (Swarm's online phase): per step and layer it selects, fetches and
     * gathers the KV the query needs. Clustered layers are fetched selectively; a layer that is not
     * clustered is attended in full from DRAM. Closing the sequence closes its decoders.
     */
    public KvDecoder decoder(DecodeOptions options) {
        boolean owned = owner.enter(this);
        try {
            checkOpen();
            Checks.notNull("options", options);
            KvDecoder d = new KvDecoder(this, store, options, alignment);
            decoders.add(d);
            return d;
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    void decoderClosed(KvDecoder d) {
        decoders.remove(d);
    }

    Store store() {
        return store;
    }

    /** How this sequence's block extents, cluster entries and groups are checksummed. */
    EntryChecksum entryChecksum() {
        return checksum;
    }

    private void checkNoFetchInFlight(String what) {
        for (KvDecoder d : decoders) {
            if (d.hasFetchInFlight()) {
                throw new IllegalStateException("cannot " + what + " sequence " + id + " while a decoder fetch is in"
                        + " flight; await its views first");
            }
        }
    }

    // ------------------------------------------------------------------ lifecycle

    private void checkOpen() {
        if (closing || closed) {
            throw new IllegalStateException("sequence " + id + " is closed"
                    + (engine.isClosed() ? " because the engine was closed" : ""));
        }
        engine.checkOpen();
    }

    boolean engineClosed() {
        return engine.isClosed();
    }

    private void checkWritable() {
        checkOpen();
        if (!writable) {
            throw new IllegalStateException("sequence " + id + " was opened read-only; use"
                    + " KvEngine.openSequenceForAppend to extend it");
        }
        if (broken != null) {
            throw new IllegalStateException("sequence " + id + " had a failed write (" + broken
                    + "); close it: its last commit is intact");
        }
    }

    /**
     * Releases the handle. Anything appended since the last commit is discarded (its extents are
     * freed); the last commit stays.
     */
    @Override
    public void close() {
        closing = true;
        owner.markClosing("sequence " + id + " is closed" + (engine.isClosed() ? " because the engine was closed" : ""));
        boolean owned = owner.enterWaiting();
        try {
            if (closed) {
                return;
            }
            for (KvDecoder d : new ArrayList<>(decoders)) {
                d.close();
            }
            closed = true;
            try {
                if (writable) {
                    for (int l = 0; l < tail.length; l++) {
                        if (tail[l] != null) {
                            store.dram().release(tail[l]);
                            tail[l] = null;
                        }
                        BlockTable t = blocks[l];
                        for (int b = 0; b < t.size(); b++) {
                            if (t.hasExtent(b) && !t.committed(b)) {
                                store.free(t.device(b), t.offset(b), t.length(b));
                            }
                        }
                        if (clusters[l] != null && !clustersCommitted[l]) {
                            if (extendsCommitted[l]) {
                                freeSegments(clusters[l], clusters[l].segmentsAddedSince(committedClusters[l]));
                            } else {
                                freeSegments(clusters[l]);
                            }
                        }
                        if (groups[l] != null && !groupsCommitted[l]) {
                            freeGroupSegments(groups[l], groupsExtendCommitted[l] ? committedGroups[l].segmentCount() : 0);
                        }
                    }
                    superseded.clear();
                }
            } finally {
                if (indexArena != null) {
                    indexArena.close();
                    indexArena = null;
                }
                engine.released(this, committed);
            }
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    @Override
    public String toString() {
        return "KvSequence{" + id + ", " + tokenCount + " tokens, " + shape + (writable ? ", writable" : "") + "}";
    }
}
