package io.kvoffload;

import io.kvoffload.internal.kvswap.CompressedKCache;
import io.kvoffload.internal.sequence.BlockWriter;
import io.kvoffload.internal.sequence.CommitProtocol;
import io.kvoffload.internal.sequence.DTypeArrays;
import io.kvoffload.internal.sequence.ExtentLedger;
import io.kvoffload.internal.sequence.GroupLayouts;
import io.kvoffload.internal.sequence.HandleGuard;
import io.kvoffload.internal.sequence.SequenceReader;
import io.kvoffload.internal.sequence.TokenIds;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.ClusterLayoutWriter;
import io.kvoffload.internal.storage.ClusterPlan;
import io.kvoffload.internal.storage.DevicePool;
import io.kvoffload.internal.storage.EntryChecksum;
import io.kvoffload.internal.storage.GroupLayout;
import io.kvoffload.internal.storage.GroupLayoutWriter;
import io.kvoffload.internal.storage.Layout;
import io.kvoffload.internal.storage.Manifest;
import io.kvoffload.internal.storage.Store;
import io.kvoffload.internal.swarm.MedoidIndex;
import io.kvoffload.internal.util.Checks;
import java.lang.foreign.MemorySegment;
import java.util.List;

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
    private final KvEngine engine;
    private final Store store;
    private final String id;
    private final KvShape shape;
    private final int blockTokens;
    /** The largest direct-I/O alignment among the devices: extents and reads are aligned to it. */
    private final int alignment;
    private final boolean writable;
    /** How this sequence's records are checksummed: with its identity, unless first committed before manifest v5. */
    private final EntryChecksum checksum;

    private final TokenIds tokens;
    /** Per layer: tokens held, block table, cluster and group layouts, and what the last commit named. */
    private final ExtentLedger ledger;
    private final BlockWriter writer;
    private final SequenceReader reader;
    private final CommitProtocol commits;
    private final SwarmLayouts swarm;
    private final GroupLayouts groupLayouts;
    private final DTypeArrays arrays;
    /** Whether anything changed since the last commit. */
    private boolean dirty;
    /** One thread at a time; closing. */
    private final HandleGuard guard;
    private final SequenceDecoders decoders = new SequenceDecoders();

    /** A new, empty, writable sequence. */
    KvSequence(KvEngine engine, Store store, String id, KvShape shape) {
        this(engine, store, id, shape, store.config().blockTokens(), true, EntryChecksum.forSequence(id), null);
    }

    /** A handle on a committed sequence. */
    KvSequence(KvEngine engine, Store store, Manifest m, boolean writable) {
        this(engine, store, m.id(), m.shape(), m.blockTokens(), writable, m.entryChecksum(), m);
    }

    private KvSequence(KvEngine engine, Store store, String id, KvShape shape, int blockTokens, boolean writable,
            EntryChecksum checksum, Manifest last) {
        this.tokens = last == null ? new TokenIds() : new TokenIds(last.tokenIds());
        this.ledger = ExtentLedger.of(store, shape.layers(), blockTokens, last, writable);
        this.engine = engine;
        this.guard = new HandleGuard(this, "sequence " + id, engine::isClosed, engine::checkOpen);
        this.checksum = checksum;
        this.store = store;
        this.id = id;
        this.shape = shape;
        this.blockTokens = blockTokens;
        this.alignment = store.devices().stream().mapToInt(DevicePool::alignment).max().orElse(4096);
        long extentBytes = Layout.extentBytes(shape, blockTokens, alignment);
        this.writable = writable;
        this.reader = new SequenceReader(store, ledger, id, shape, checksum, blockTokens, extentBytes, alignment);
        this.writer = new BlockWriter(store, ledger, id, shape, checksum, blockTokens, extentBytes, reader::loadBlock);
        this.commits = new CommitProtocol(store, ledger, writer, id, shape, blockTokens, checksum, last);
        this.arrays = new DTypeArrays(shape.dtype());
        this.swarm = new SwarmLayouts(id, shape, store.devices().size(), l -> ledger.layer(l).clusters(),
                this::applyClusterPlan, (l, n) -> new SequenceLayerKv(this, l, n));
        this.groupLayouts = new GroupLayouts(store, id, shape, checksum, blockTokens, this::read);
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
        return tokens.count();
    }

    /** Tokens whose KV has been appended for {@code layer}. */
    public int tokenCount(int layer) {
        Checks.index("layer", layer, shape.layers());
        return ledger.layer(layer).tokens();
    }

    /** A copy of the token ids. */
    public int[] tokenIds() {
        return tokens.toArray();
    }

    public boolean isWritable() {
        return writable;
    }

    /** Whether the last {@link #commit} covers everything appended. */
    public boolean isCommitted() {
        return commits.committed() && !dirty;
    }

    /**
     * Declares new token positions with their token ids (a prefill chunk or one decode token).
     * Their KV follows per layer through {@link #appendKv}.
     */
    public void appendTokens(int... ids) {
        guard.run(() -> {
            checkWritable();
            tokens.append(ids);
            if (ids.length > 0) {
                dirty = true;
            }
        });
    }

    /**
     * Appends K and V of the next tokens of {@code layer}. Both segments hold the same number of
     * tokens, {@code kvHeads × headDim} elements each, in the shape's dtype.
     */
    public void appendKv(int layer, MemorySegment keys, MemorySegment values) {
        guard.run(() -> {
            checkWritable();
            Checks.index("layer", layer, shape.layers());
            int held = ledger.layer(layer).tokens();
            try {
                writer.append(layer, keys, values, tokens.count());
            } finally {
                dirty |= ledger.layer(layer).tokens() != held;
            }
        });
    }

    /** {@link #appendKv(int, MemorySegment, MemorySegment)} for F32 sequences. */
    public void appendKv(int layer, float[] keys, float[] values) {
        appendKv(layer, arrays.f32("keys", keys), DTypeArrays.of("values", values));
    }

    /** {@link #appendKv(int, MemorySegment, MemorySegment)} for F16 and BF16 sequences (raw bit patterns). */
    public void appendKv(int layer, short[] keys, short[] values) {
        appendKv(layer, arrays.f16("keys", keys), DTypeArrays.of("values", values));
    }

    /**
     * Makes everything appended so far durable: partial last blocks are written, the devices are
     * synced, and a new manifest atomically replaces the previous one. After a crash at any point
     * the sequence is either in its previous committed state or in this one.
     *
     * @throws IllegalStateException if a layer lacks KV for some token, or nothing changed since the
     *     last commit
     * @throws KvIoException if a block write, a device sync or the manifest write fails; the previous
     *     commit is intact (docs/architecture.md, "Errors")
     */
    public void commit() {
        guard.run(() -> {
            checkWritable();
            decoders.checkNoFetchInFlight("commit", id);
            commits.commit(tokens, dirty);
            dirty = false;
        });
    }

    /**
     * Lays tokens {@code [0, plan.clusteredTokens())} of {@code layer} out by cluster (Swarm §5.2):
     * each cluster's share of each device becomes one extent, replicas are physical copies, every
     * entry gets a CRC32C. The layer's block extents that the clusters now cover are released after
     * the next {@link #commit} (until then the previous commit still names them).
     */
    void applyClusterPlan(int layer, ClusterPlan plan) {
        checkWritable();
        Checks.index("layer", layer, shape.layers());
        Checks.inRange("plan.clusteredTokens()", plan.clusteredTokens(), 1, ledger.layer(layer).tokens());
        writer.flush();
        ClusterLayout layout = ClusterLayoutWriter.write(store, id, checksum, layer, shape, plan,
                (positions, k, v) -> read(layer, positions, k, v));
        ledger.installClusters(layer, layout);
        dirty = true;
    }

    /**
     * Online maintenance (Swarm Eq. 9) grew the layer's clusters: {@code grown} extends the current
     * layout with appended entries (and new clusters) and shares all its extents. Blocks whose
     * tokens are now all clustered are retired; {@link #commit} persists the grown layout.
     */
    void extendClusters(int layer, ClusterLayout grown) {
        checkWritable();
        ledger.extendClusters(layer, grown);
        dirty = true;
    }

    /** Installs a medoid index the decoder extended for {@code layout} (so it is not rebuilt from the SSDs). */
    void installMedoidIndex(int layer, MedoidIndex index, ClusterLayout layout) {
        swarm.install(layer, index, layout);
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
        return guard.call(() -> {
            checkOffline(layer, "activationSets", activationSets, options);
            return swarm.fromActivationSets(layer, ledger.layer(layer).tokens(), activationSets, options);
        });
    }

    /**
     * Swarm's offline phase for {@code layer} from queries: the library computes each query's exact
     * top activations ({@code options.sparsity()} of the tokens; sinks and the local window excluded)
     * over the stored keys, then clusters as {@link #clusterLayer(int, List, ClusterOptions)} does.
     *
     * @param queries each {@code queryHeads × headDim} floats, head after head
     */
    public ClusterSummary clusterLayerFromQueries(int layer, List<float[]> queries, ClusterOptions options) {
        return guard.call(() -> {
            checkOffline(layer, "queries", queries, options);
            return swarm.fromQueries(layer, ledger.layer(layer).tokens(), queries, options);
        });
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
        return guard.call(() -> {
            checkOffline(layer, "clusters", clusters, options);
            return swarm.fromClusters(layer, ledger.layer(layer).tokens(), clusters, options);
        });
    }

    private void checkOffline(int layer, String inputName, Object input, Object options) {
        checkWritable();
        Checks.index("layer", layer, shape.layers());
        Checks.notNull(inputName, input);
        Checks.notNull("options", options);
    }

    /** Clusters of {@code layer} (0 if it is not clustered). */
    public int clusterCount(int layer) {
        guard.checkOpen();
        Checks.index("layer", layer, shape.layers());
        return ledger.layer(layer).clusterCount();
    }

    /** Token positions of a cluster of {@code layer}, in storage order. */
    public int[] clusterMembers(int layer, int cluster) {
        return clusterOf(layer, cluster).members(cluster);
    }

    /** The medoid (representative token) of a cluster of {@code layer}. */
    public int clusterMedoid(int layer, int cluster) {
        return clusterOf(layer, cluster).medoid(cluster);
    }

    private ClusterLayout clusterOf(int layer, int cluster) {
        guard.checkOpen();
        Checks.index("layer", layer, shape.layers());
        ClusterLayout cl = ledger.layer(layer).clusters();
        Checks.index("cluster", cluster, cl == null ? 0 : cl.clusterCount());
        return cl;
    }

    /**
     * The layer's DRAM medoid index, built on first use (after a restart, from the persisted
     * clustering and the medoids' keys read back from the SSDs).
     */
    MedoidIndex medoidIndex(int layer) {
        return swarm.medoidIndex(layer);
    }

    /** The layer's cluster layout, or null. */
    ClusterLayout clusterLayout(int layer) {
        Checks.index("layer", layer, shape.layers());
        return ledger.layer(layer).clusters();
    }

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
        return guard.call(() -> {
            checkWritable();
            Checks.index("layer", layer, shape.layers());
            Checks.notNull("options", options);
            GroupSummary summary = groupLayouts.write(layer, ledger, options, () -> options.rankFor(shape), () -> {
                decoders.checkNoFetchInFlight("re-lay out", id);
                writer.flush();
            });
            swarm.forget(layer); // the groups replaced any cluster layout
            dirty = true;
            return summary;
        });
    }

    /**
     * The layer's compressed K cache, rebuilt from its stored (CRC-checked) keys through the
     * persisted adapter: tokens {@code [0, groupedTokens)}. Rebuilt rather than persisted: it costs
     * one pass over the layer, like the prefill that produced it, and always matches the stored keys.
     */
    CompressedKCache compressedKeys(int layer, DType storage, int expectedTokens) {
        return groupLayouts.compressedKeys(layer, ledger.layer(layer).groups(), storage, expectedTokens);
    }

    /** The layer's group layout, or null. */
    GroupLayout groupLayout(int layer) {
        Checks.index("layer", layer, shape.layers());
        return ledger.layer(layer).groups();
    }

    /** Groups of {@code layer} (0 if it has no group layout). */
    public int groupCount(int layer) {
        guard.checkOpen();
        Checks.index("layer", layer, shape.layers());
        return ledger.layer(layer).groupCount();
    }

    /**
     * KVSwap's rolling buffer flushed full groups: {@code grown} appends groups to the layer's
     * current group layout ({@link GroupLayoutWriter#append}) and shares all its extents. Blocks
     * whose tokens are now all grouped are retired; {@link #commit} persists the grown layout, and a
     * close without commit frees only the appended segments.
     */
    void extendGroups(int layer, GroupLayout grown) {
        checkWritable();
        ledger.extendGroups(layer, grown);
        writer.flush(); // a block about to be retired may still have its write queued
        ledger.retireCoveredBlocks(layer, grown.groupedTokens());
        dirty = true;
    }

    /**
     * Gathers the K and V of {@code positions} (any order, repeats allowed) of {@code layer} into
     * {@code keysOut} and {@code valuesOut}, token-major in the order given. Data comes from DRAM
     * when the block is still there, else from the SSDs, each extent checked against its CRC32C.
     *
     * @throws KvChecksumException if an extent read back does not match its checksum
     */
    public void read(int layer, int[] positions, MemorySegment keysOut, MemorySegment valuesOut) {
        guard.run(() -> {
            guard.checkOpen();
            Checks.index("layer", layer, shape.layers());
            reader.read(layer, positions, keysOut, valuesOut, writer.tail(layer));
        });
    }

    /** Reads tokens {@code [from, from + count)} of {@code layer}. */
    public void read(int layer, int from, int count, MemorySegment keysOut, MemorySegment valuesOut) {
        guard.run(() -> {
            guard.checkOpen();
            Checks.index("layer", layer, shape.layers());
            read(layer, reader.range(layer, from, count), keysOut, valuesOut);
        });
    }

    /** {@link #read(int, int[], MemorySegment, MemorySegment)} into arrays, for F32 sequences. */
    public void read(int layer, int[] positions, float[] keysOut, float[] valuesOut) {
        guard.run(() -> read(layer, positions, arrays.f32("keysOut", keysOut), DTypeArrays.of("valuesOut", valuesOut)));
    }

    /** {@link #read(int, int[], MemorySegment, MemorySegment)} into arrays, for F16/BF16 sequences. */
    public void read(int layer, int[] positions, short[] keysOut, short[] valuesOut) {
        guard.run(() -> read(layer, positions, arrays.f16("keysOut", keysOut), DTypeArrays.of("valuesOut", valuesOut)));
    }

    /**
     * A decoder for this sequence (Swarm's online phase): per step and layer it selects, fetches and
     * gathers the KV the query needs. Clustered layers are fetched selectively; a layer that is not
     * clustered is attended in full from DRAM. Closing the sequence closes its decoders.
     */
    public KvDecoder decoder(DecodeOptions options) {
        return guard.call(() -> {
            guard.checkOpen();
            Checks.notNull("options", options);
            KvDecoder d = new KvDecoder(this, store, options, alignment);
            decoders.add(d);
            return d;
        });
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

    boolean engineClosed() {
        return engine.isClosed();
    }

    private void checkWritable() {
        guard.checkOpen();
        if (!writable) {
            throw new IllegalStateException("sequence " + id + " was opened read-only; use"
                    + " KvEngine.openSequenceForAppend to extend it");
        }
        writer.checkNotBroken();
    }

    /**
     * Releases the handle. Anything appended since the last commit is discarded (its extents are
     * freed); the last commit stays.
     */
    @Override
    public void close() {
        guard.close(() -> {
            decoders.closeAll();
            guard.markClosed();
            try {
                if (writable) {
                    writer.releaseTails();
                    ledger.freeUncommitted();
                }
            } finally {
                swarm.close();
                engine.released(this, commits.committed());
            }
        });
    }

    @Override
    public String toString() {
        return "KvSequence{" + id + ", " + tokens.count() + " tokens, " + shape + (writable ? ", writable" : "") + "}";
    }
}
