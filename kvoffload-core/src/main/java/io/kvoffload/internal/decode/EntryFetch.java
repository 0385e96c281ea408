package io.kvoffload.internal.decode;

import io.kvoffload.internal.storage.HeadShards;
import io.kvoffload.KvIoException;
import io.kvoffload.internal.sched.BucketScheduler;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.EntryChecksum;
import io.kvoffload.internal.storage.EntryVerifier;
import io.kvoffload.internal.storage.ReplicaFailover;
import io.kvoffload.internal.storage.Store;
import io.kvoffload.strategy.FetchPlan;
import java.lang.foreign.MemorySegment;

/**
 * One pipeline slot of a decoder: the fetch pipeline's working state and its steps for layouts of
 * single entries (Swarm's clusters, the plug-in strategies' positional pages). A step is
 * <ol>
 *   <li>rows: {@link #beginRows}, then the fetcher adds each distinct token ({@link #addRow}) and
 *       the layout entries to read ({@link #addRead}, repeats kept);</li>
 *   <li>{@link #submit}: the bucket scheduler plans the reads against DRAM residency (Eq. 8: each
 *       entry once, none that DRAM holds, spread over the SSDs, neighbours merged), one batch;</li>
 *   <li>{@link #copyResident}: rows that the window or the hot cache hold, while the SSDs work;</li>
 *   <li>{@link #gather}: each run is verified entry by entry (checksum seeded with the token
 *       wanted) and scattered into the view as it lands; a failed copy is served from a replica,
 *       which repairs it, or the fetch fails.</li>
 * </ol>
 * Everything is allocated once and grown rarely, so a steady-state step allocates nothing.
 */
public final class EntryFetch implements HotClusterCache.TokenSource, StagedReads.RunSink, AutoCloseable {
    private final Store store;
    private final EntryChecksum checksum;
    private final EntryVerifier verifier;
    private final String sequenceId;
    /** Bytes of the in-flight layout's stored entries (whole entries, or head-group shards), and its head groups per token. */
    private int unit;
    private int shards = 1;
    /** The step's reads as layout keys (token × shards + head group) when the layout is head-sharded. */
    private int[] keys = new int[1024];
    private final ShardKeys shardResidency = new ShardKeys();
    private final boolean checksums;
    private final DecodeCounters counters;
    public final BucketScheduler scheduler;
    public final StagedReads reads;
    public final ViewRows viewRows = new ViewRows();
    /** The positions a plug-in strategy chose this step. */
    public final FetchPlan plan = new FetchPlan();
    /** The step's positions came from {@link #plan} (its selector hears {@code afterStep}). */
    public boolean planned;
    /** Positions came from the caller ({@code prefetch(layer, positions, count)}): caches and maintenance see no step. */
    public boolean external;
    /** Per row, the KV heads a per-head plan wants it for (valid while {@link #perHeadRows}). */
    private long[] rowHeads = new long[1024];
    private boolean perHeadRows;
    private int[] concat = new int[1024];
    private int concatSize;
    /** Entries read only to complete pages chosen in part, for the hot cache ({@link #complete}). */
    private final PageCompletion completion = new PageCompletion();
    private long startNanos;
    private ReplicaFailover failover; // created on the first failed read
    private final int alignment;
    private UnitFetch unitFetch; // created on a strategy's first auxiliary read
    /** A batched fetch's resident rows, copied at {@link #gather} (see {@link #copyResident}). */
    private DramWindow deferredWindow;
    private HotClusterCache deferredCache;
    private ShardCaches deferredShards;
    /** Per head group, what its shard cache admits from: that group of the view's rows. */
    private ShardSource[] shardSources = new ShardSource[0];
    // The fetch in flight.
    private ViewBuffer view;
    private ClusterLayout layout;
    private int layer;

    public EntryFetch(Store store, EntryChecksum checksum, String sequenceId, int entryBytes, int alignment,
            BucketScheduler.Mode mode, DecodeCounters counters) {
        this.store = store;
        this.checksum = checksum;
        this.verifier = new EntryVerifier(store, checksum, sequenceId);
        this.sequenceId = sequenceId;
        this.unit = entryBytes;
        this.checksums = verifier.enabled();
        this.counters = counters;
        this.scheduler = new BucketScheduler(store.devices().size(), entryBytes, Math.max(1, (256 << 10) / entryBytes),
                mode);
        this.scheduler.readAlignment(alignment);
        this.reads = new StagedReads(store, alignment);
        this.alignment = alignment;
    }

    /**
     * Reads the units the strategy asked for in {@code plan.units()} from {@code layout} (step 1 of
     * a two-step strategy), verified, and waits for them; counted as this step's reads.
     */
    public void readUnits(io.kvoffload.internal.storage.UnitLayout layout, int layer) {
        if (plan.units().size() == 0) {
            return;
        }
        if (unitFetch == null) {
            unitFetch = new UnitFetch(store, checksum, sequenceId, alignment, counters);
        }
        unitFetch.read(layout, layer, plan.units());
    }

    /** The read alignment of the store's SSDs. */
    public int alignment() {
        return alignment;
    }

    /** Starts a step's rows over a layer of {@code tokens} tokens. */
    public void beginRows(int tokens) {
        viewRows.begin(tokens);
        concatSize = 0;
        completion.clear();
        planned = false;
        external = false;
        perHeadRows = false;
    }

    /**
     * From now on rows are wanted by some KV heads only ({@link #wantHeads}); the {@code rows} rows
     * so far (the sinks and the window) by every head. Only for a head-sharded layout, whose reads
     * can leave groups out.
     */
    public void perHeadRows(int rows) {
        perHeadRows = true;
        growRowHeads(rows);
        java.util.Arrays.fill(rowHeads, 0, rows, FetchPlan.ALL_HEADS);
    }

    private void growRowHeads(int rows) {
        if (rows > rowHeads.length) {
            rowHeads = java.util.Arrays.copyOf(rowHeads, Math.max(rows, rowHeads.length * 2));
        }
    }

    /** Row {@code row} (new this step when {@code added}) is wanted by the KV heads of {@code mask} too. */
    public void wantHeads(int row, long mask, boolean added) {
        growRowHeads(row + 1);
        rowHeads[row] = added ? mask : rowHeads[row] | mask;
    }

    /** Gives {@code token} a row (once); returns the row count. */
    public int addRow(int token, int rows) {
        return viewRows.add(token, rows);
    }

    /** Room for {@code n} more layout entries to read without growing inside the loop. */
    public void reserveReads(int n) {
        if (concatSize + n > concat.length) {
            concat = java.util.Arrays.copyOf(concat, Math.max(concatSize + n, concat.length * 2));
        }
    }

    /** Asks for {@code token}'s entry (call {@link #reserveReads} first); residents are dropped by the scheduler. */
    public void addRead(int token) {
        concat[concatSize++] = token;
    }

    /**
     * Asks for head group {@code group} of {@code token} (group 0 of a token-striped layout) only to
     * complete a page chosen in part ({@link PageCompletion}), unless a row already wants it. Call after
     * every row of the step is added. Residents are dropped by the scheduler as any read.
     */
    public void complete(int token, int group, int shards) {
        if (wants(token, group, shards)) {
            return;
        }
        completion.want(shards == 1 ? token : token * shards + group);
    }

    /** Whether a row of this step wants {@code token}'s head group {@code group} (of a plan's step). */
    private boolean wants(int token, int group, int shards) {
        if (!viewRows.contains(token)) {
            return false;
        }
        if (shards == 1 || !perHeadRows) {
            return true;
        }
        long want = rowHeads[viewRows.row(token)];
        return want == FetchPlan.ALL_HEADS || (want & HeadShards.groupBits(group, plan.kvHeads() / shards)) != 0;
    }

    /**
     * The KV heads of {@code token} this step read only to complete a page ({@link #complete}) and that
     * landed: every bit when a token-striped entry did, else the bits of each head group that did.
     */
    public long completedHeads(int token, int shards, int kvHeads) {
        if (shards == 1) {
            return completion.offsetOf(token) >= 0 ? -1L : 0;
        }
        long heads = 0;
        for (int g = 0; g < shards; g++) {
            if (completion.offsetOf(token * shards + g) >= 0) {
                heads |= HeadShards.groupBits(g, kvHeads / shards);
            }
        }
        return heads;
    }

    /**
     * Plans the reads against {@code layout} and {@code residency}, submits them in one batch and
     * starts the I/O clock; {@code t0} is when selection began.
     */
    public void submit(ViewBuffer view, int layer, ClusterLayout layout, ShardResidency residency, long t0) {
        this.view = view;
        this.layout = layout;
        this.layer = layer;
        reads.clear();
        if (layout != null) { // null: nothing of the layer is laid out, so nothing is read
            shards = layout.shards();
            unit = layout.storedEntryBytes();
            scheduler.entryBytes(unit);
        }
        int extra = completion.wantedCount();
        if (concatSize + extra > 0 && shards == 1) {
            reserveReads(extra);
            System.arraycopy(completion.wanted(), 0, concat, concatSize, extra);
            scheduler.plan(concat, concatSize + extra, layout, residency);
            reads.fill(scheduler);
        } else if (concatSize + extra > 0) {
            // Every token is read as its head groups, each from the device that holds that group;
            // under a per-head plan only the groups that hold a head the token is wanted for.
            int n = concatSize * shards + extra;
            if (keys.length < n) {
                keys = new int[Math.max(n, keys.length * 2)];
            }
            int k = 0;
            boolean partial = false;
            int perGroup = view.keyHeads() / shards;
            for (int i = 0; i < concatSize; i++) {
                int t = concat[i];
                long want = perHeadRows ? rowHeads[viewRows.row(t)] : FetchPlan.ALL_HEADS;
                for (int g = 0; g < shards; g++) {
                    if (want == FetchPlan.ALL_HEADS || (want & HeadShards.groupBits(g, perGroup)) != 0) {
                        keys[k++] = t * shards + g;
                    } else {
                        partial = true;
                    }
                }
            }
            System.arraycopy(completion.wanted(), 0, keys, k, extra);
            n = k + extra;
            if (partial) {
                view.expectPartialRows(); // before any row is written
            }
            shardResidency.of(residency, shards);
            scheduler.plan(keys, n, layout, residency == null ? null : shardResidency);
            reads.fill(scheduler);
        }
        // I/O time runs from the submission: a backend may start (or even finish) reads inside submit.
        long t1 = System.nanoTime();
        counters.selectNanos += t1 - t0;
        startNanos = t1;
        reads.submit();
    }

    /**
     * Copies the rows DRAM holds (sinks, window, cached clusters) into the view; in a batch
     * ({@link SharedPlan}) at {@link #gather} instead, so every member's reads go out before any
     * member's copies and the copies overlap them.
     */
    public void copyResident(DramWindow w, HotClusterCache cache, ShardCaches shardCaches) {
        if (reads.sharing()) {
            deferredWindow = w;
            deferredCache = cache;
            deferredShards = shardCaches;
            return;
        }
        copyRows(w, cache, shardCaches);
    }

    private void copyRows(DramWindow w, HotClusterCache cache, ShardCaches shardCaches) {
        int rows = view.rows();
        for (int r = 0; r < rows; r++) {
            int t = viewRows.token(r);
            if (w.contains(t)) {
                view.putRow(r, t, w.keySegment(t), w.keyOffset(t), w.valueSegment(t), w.valueOffset(t));
                counters.tokensWindow++;
            } else if (cache != null) {
                int slot = cache.slotOf(t);
                if (slot >= 0) {
                    view.putEntry(r, t, cache.slotSegment(slot), cache.slotOffset(slot));
                    counters.tokensCached++;
                }
            } else if (shardCaches != null) {
                copyCachedShards(r, t, shardCaches);
            }
        }
    }

    /**
     * The head groups of row {@code r} (token {@code t}) that it is wanted for and that the group's
     * cache holds (the scheduler left them out of the reads: {@link ShardResidency}). The token counts
     * as served from the cache when its first wanted group is, as {@link #shardZeroKeys} counts reads.
     */
    private void copyCachedShards(int r, int t, ShardCaches shardCaches) {
        int s = shardCaches.shards(), perGroup = view.keyHeads() / s;
        long want = perHeadRows ? rowHeads[r] : FetchPlan.ALL_HEADS;
        boolean first = true;
        for (int g = 0; g < s; g++) {
            if (want != FetchPlan.ALL_HEADS && (want & HeadShards.groupBits(g, perGroup)) == 0) {
                continue;
            }
            HotClusterCache c = shardCaches.of(g);
            int slot = c.slotOf(t);
            if (slot >= 0) {
                view.putShard(r, t, g, s, c.slotSegment(slot), c.slotOffset(slot));
                counters.tokensCached += first ? 1 : 0;
            }
            first = false;
        }
    }

    /** What head group {@code shard}'s cache copies an admitted shard from: that group of the token's view row. */
    public HotClusterCache.TokenSource shardSource(int shard, int shards) {
        if (shardSources.length < shards) {
            ShardSource[] grown = java.util.Arrays.copyOf(shardSources, shards);
            for (int g = shardSources.length; g < shards; g++) {
                grown[g] = new ShardSource(g);
            }
            shardSources = grown;
        }
        shardSources[shard].shards = shards;
        return shardSources[shard];
    }

    private final class ShardSource implements HotClusterCache.TokenSource {
        private final int shard;
        private int shards;

        ShardSource(int shard) {
            this.shard = shard;
        }

        @Override
        public void copyEntry(int token, MemorySegment dst, long offset) {
            long bits = HeadShards.groupBits(shard, view.keyHeads() / shards);
            if (viewRows.contains(token) && (view.headMask(viewRows.row(token)) & bits) == bits) {
                view.copyShardTo(viewRows.row(token), shard, shards, dst, offset);
            } else {
                completion.copy(token * shards + shard, reads.memory(), unit, dst, offset);
            }
        }
    }

    /** Waits for the reads, verifying and gathering each run as it lands. */
    public void gather() {
        if (deferredWindow != null) {
            DramWindow w = deferredWindow;
            deferredWindow = null;
            copyRows(w, deferredCache, deferredShards);
        }
        if (reads.runs() > 0) {
            counters.ioNanos += reads.gatherAsLanded(this) - startNanos;
        }
    }

    /** Ends the step (also when it failed). */
    public void clear() {
        deferredWindow = null;
        deferredCache = null;
        deferredShards = null;
        reads.clear();
    }

    @Override
    public void copyEntry(int token, MemorySegment dst, long offset) {
        if (viewRows.contains(token)) {
            view.copyEntryTo(viewRows.row(token), dst, offset);
        } else {
            completion.copy(token, reads.memory(), unit, dst, offset);
        }
    }

    /** Run {@code r} landed: verify each entry and put it in the view. */
    @Override
    public void landed(int r) {
        BucketScheduler sched = scheduler;
        MemorySegment mem = reads.memory();
        int[] planned = sched.plannedEntries();
        int dev = sched.runDevice(r);
        int first = sched.runFirst(r);
        int n = sched.runEntries(r);
        reads.countRead(r, counters);
        int s = shards;
        long runAt = reads.at(r);
        long runOffset = sched.runOffset(r);
        int e = -2; // the entry verified last: the run's next one is usually e + 1
        int completing = 0;
        for (int k = 0; k < n; k++) {
            int key = planned[first + k];
            long at = runAt + (long) k * unit;
            long fileOffset = runOffset + (long) k * unit;
            if (completes(key)) {
                // Read only for the cache: a copy that does not verify is left out (its page stays
                // uncached) and reported; it never fails the step, whose rows do not need it.
                int c = checksums ? check(key, dev, fileOffset, at, e + 1) : e + 1;
                if (c >= 0) {
                    completion.landed(key, at);
                } else {
                    verifier.mismatch(dev, layer, key / s, false);
                }
                e = c >= 0 ? c : ~c;
                completing++;
                continue;
            }
            if (checksums) {
                e = verify(key, dev, fileOffset, at, e + 1);
            }
            put(key, mem, at);
        }
        counters.tokensFetched += s == 1 ? n - completing : shardZeroKeys(planned, first, n);
    }

    /** Whether planned key {@code key} was read only to complete a page ({@link #complete}). */
    private boolean completes(int key) {
        return completion.wantedCount() > 0
                && !wants(shards == 1 ? key : key / shards, shards == 1 ? 0 : key % shards, shards);
    }

    /** Puts stored entry {@code key} (a whole entry, or a token's head group) into the view. */
    private void put(int key, MemorySegment mem, long at) {
        if (shards == 1) {
            view.putEntry(viewRows.row(key), key, mem, at);
        } else {
            int token = key / shards;
            view.putShard(viewRows.row(token), token, key % shards, shards, mem, at);
        }
    }

    /** Tokens among keys {@code [first, first + n)}: each token's first group read counts it once. */
    private int shardZeroKeys(int[] planned, int first, int n) {
        int c = 0;
        int perGroup = view.keyHeads() / shards;
        for (int k = first; k < first + n; k++) {
            int key = planned[k];
            int g = key % shards;
            if (completes(key)) {
                continue; // read only to complete a page
            }
            if (g == 0 || perHeadRows && firstGroup(rowHeads[viewRows.row(key / shards)], perGroup) == g) {
                c++;
            }
        }
        return c;
    }

    /** The first head group that holds a head of {@code mask}. */
    private static int firstGroup(long mask, int perGroup) {
        return mask == FetchPlan.ALL_HEADS ? 0 : Long.numberOfTrailingZeros(mask) / perGroup;
    }

    @Override
    public void failed(int run, KvIoException e) {
        if (!checksums) {
            throw e;
        }
        // The read failed: serve each of its entries from another copy (which repairs this one).
        BucketScheduler sched = scheduler;
        int dev = sched.runDevice(run);
        int completing = 0;
        for (int k = 0; k < sched.runEntries(run); k++) {
            int key = sched.plannedEntries()[sched.runFirst(run) + k];
            if (completes(key)) {
                completing++; // read only for the cache: its page stays uncached
                continue;
            }
            long at = reads.at(run) + (long) k * unit;
            failover().recover(layout, layer, key, dev, sched.runOffset(run) + (long) k * unit,
                    "read failed: " + e.getMessage(), reads.memory(), at);
            put(key, reads.memory(), at);
        }
        counters.tokensFetched += shards == 1 ? sched.runEntries(run) - completing
                : shardZeroKeys(sched.plannedEntries(), sched.runFirst(run), sched.runEntries(run));
    }

    /**
     * Checks stored entry {@code key} read from ({@code dev}, {@code fileOffset}): its entry id when it
     * verifies, else the id's complement (negative).
     */
    private int check(int key, int dev, long fileOffset, long at, int hint) {
        int e = layout.entryAt(key, dev, fileOffset, hint);
        // Seeded with the key wanted, so an entry from elsewhere fails even when its bytes are intact.
        int actual = reads.checksum(checksum, layout.checksumKind(), layer, key, at, unit);
        if (actual != layout.entryCrc(e)) {
            return ~e;
        }
        verifier.verified();
        return e;
    }

    /** Verifies stored entry {@code key} read from ({@code dev}, {@code fileOffset}); returns its entry id. */
    private int verify(int key, int dev, long fileOffset, long at, int hint) {
        int c = check(key, dev, fileOffset, at, hint);
        int e = c >= 0 ? c : ~c;
        if (c < 0) {
            verifier.mismatch(dev, layer, key / shards, false);
            // Another copy, if the key has one, serves the fetch and repairs this one; else this throws.
            failover().recover(layout, layer, key, dev, fileOffset, "checksum mismatch", reads.memory(), at);
        }
        return e;
    }

    private ReplicaFailover failover() {
        if (failover == null) {
            failover = new ReplicaFailover(store, checksum, sequenceId);
        }
        return failover;
    }

    /** DRAM residency of a layer's tokens and, under head sharding, of each token's head-group shards. */
    public interface ShardResidency extends BucketScheduler.Residency {
        /** Whether DRAM holds head group {@code shard} of {@code token} (the window, or that group's cache). */
        boolean residentShard(int token, int shard);
    }

    /**
     * DRAM residency of a head-sharded layout's keys ({@code token × shards + group}): a key is resident
     * when its group of its token is ({@link ShardResidency#residentShard}).
     */
    private static final class ShardKeys implements BucketScheduler.Residency {
        private ShardResidency groups;
        private int shards;

        void of(ShardResidency groups, int shards) {
            this.groups = groups;
            this.shards = shards;
        }

        @Override
        public boolean resident(int key) {
            return groups.residentShard(key / shards, key % shards);
        }
    }

    @Override
    public void close() {
        try {
            reads.close();
        } finally {
            if (unitFetch != null) {
                unitFetch.close();
            }
        }
    }
}
