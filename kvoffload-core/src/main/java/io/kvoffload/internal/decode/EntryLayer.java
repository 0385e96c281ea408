package io.kvoffload.internal.decode;

import io.kvoffload.DecodeOptions;
import io.kvoffload.KvDegradation;
import io.kvoffload.KvSequence;
import io.kvoffload.internal.sequence.SequenceHooks;
import io.kvoffload.internal.storage.ClusterLayout;
import java.lang.foreign.MemorySegment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What every layer fetched entry by entry shares: the DRAM window (sinks, then the newest tokens and
 * every token past the layout), the layout, an optional hot cache, DRAM residency for the scheduler
 * and the caller-chosen positions path. Subclasses choose the positions of a step.
 */
public abstract class EntryLayer implements LayerFetcher, EntryFetch.ShardResidency {
    private static final Logger LOG = LoggerFactory.getLogger(EntryLayer.class);

    protected final SequenceHooks store;
    protected final KvSequence sequence;
    protected final DecodeOptions options;
    protected final int layer;
    protected final DecodeCounters counters;
    protected final DramWindow window;
    /** The layer's entries on the SSDs, or null (then every token is in the window). */
    protected ClusterLayout layout;
    /** The hot-cluster cache of a layout that stores tokens whole, or null. */
    protected HotClusterCache cache;
    /** The hot-cluster caches of a head-sharded layout, one per head group, or null. */
    protected ShardCaches shardCaches;
    /** Swarm's Eq. 6 score for the hot-cluster cache: I/O saved per cached entry. */
    private static final io.kvoffload.internal.cache.CostEffectiveness SCORE =
            io.kvoffload.internal.cache.CostEffectiveness.savedIoPerEntry(80_000, 2_000);
    /** Whether this layer keeps a hot-cluster cache ({@link #openCache}), its policy, and whether one per head group. */
    private boolean cached;
    private boolean cacheLru;
    private boolean cacheShards;

    protected EntryLayer(SequenceHooks store, DecodeOptions options, int layer, DecodeCounters counters) {
        this.store = store;
        this.sequence = store.sequence();
        this.options = options;
        this.layer = layer;
        this.counters = counters;
        int tokens = sequence.tokenCount(layer);
        this.layout = store.ledger().layer(layer).clusters();
        int clustered = layout == null ? 0 : layout.clusteredTokens();
        int sinkEnd = Math.min(options.sinkTokens(), tokens);
        int start = Math.max(sinkEnd, Math.min(clustered, tokens - options.localWindow()));
        // A layer never laid out is attended in full from DRAM: say so once per layer (log, listener, JFR, counter).
        boolean neverLaidOut = layout == null && tokens > sinkEnd + options.localWindow();
        if (neverLaidOut || (tokens - start > Math.max(options.localWindow(), 1) * 4L && tokens - start > 4096)) {
            String why = (tokens - start) + " tokens are not laid out and stay in DRAM for attention; lay the"
                    + " layer out (SelectionStrategy.layOut, or the strategy's own offline phase) to fetch them selectively";
            LOG.warn("sequence {} layer {}: {}", sequence.id(), layer, why);
            counters.unclusteredLayers++;
            store.store().degradations().report(new KvDegradation(KvDegradation.Kind.UNCLUSTERED_LAYER,
                    sequence.id(), layer, why));
        }
        this.window = new DramWindow(store.store().elastic(), store.store().dram(), sequence.shape().halfEntryBytes(),
                sinkEnd, start, tokens - start + options.localWindow());
        try {
            window.load(sequence, layer, tokens);
        } catch (RuntimeException e) {
            window.close();
            throw e;
        }
    }

    /**
     * Opens the layer's hot-cluster cache (Swarm §6.3) over its layout, at the decoder's share of the
     * cache budget per layer ({@link DecodeOptions#cacheBytes()}, by default an eighth of the DRAM
     * budget over all layers); later resizes come from the elastic pool ({@link #resizeCache}). No
     * cache when the layer has no layout.
     *
     * @param lru evict the least recently activated cluster instead of Eq. 6's least cost-effective
     */
    protected final void openCache(boolean lru) {
        openCache(lru, false);
    }

    /**
     * {@link #openCache(boolean)}; with {@code perShard}, over a head-sharded layout, one cache per
     * head group ({@link #shardCaches}) instead of one of whole entries: for steps that read some head
     * groups of a token and not others (a per-head plan). The subclass steps whichever it opened.
     */
    protected final void openCache(boolean lru, boolean perShard) {
        if (layout == null) {
            return;
        }
        cached = true;
        cacheLru = lru;
        cacheShards = perShard && layout.shards() > 1;
        long total = options.cacheBytes() == DecodeOptions.AUTO ? store.store().config().dramBudgetBytes() / 8
                : options.cacheBytes();
        resizeCache(total / sequence.shape().layers());
    }

    /**
     * Resizes the hot-cluster cache between steps (opening one when the layer had none): shrinking
     * gives back the units of the clusters Eq. 6 (or LRU) least wants to keep.
     */
    @Override
    public long resizeCache(long bytes) {
        if (!cached || layout == null) {
            return 0;
        }
        if (cacheShards) {
            if (shardCaches == null) {
                int shardBytes = shardBytes();
                if (bytes / layout.shards() < shardBytes) {
                    return 0;
                }
                shardCaches = new ShardCaches(store.store().elastic(), layout, shardBytes, bytes, cacheLru, SCORE);
                return shardCaches.heldBytes();
            }
            return shardCaches.resize(bytes);
        }
        if (cache == null) {
            if (bytes < sequence.shape().entryBytes()) {
                return 0;
            }
            cache = new HotClusterCache(store.store().elastic(), layout, sequence.shape().entryBytes(), bytes, cacheLru,
                    SCORE);
            return cache.heldBytes();
        }
        cache.resize(bytes);
        return cache.heldBytes();
    }

    /** Bytes of one stored head-group shard (K then V of the group's heads). */
    private int shardBytes() {
        return sequence.shape().entryBytes() / layout.shards();
    }

    @Override
    public long cacheHeldBytes() {
        return (cache == null ? 0 : cache.heldBytes()) + (shardCaches == null ? 0 : shardCaches.heldBytes());
    }

    @Override
    public DramWindow window() {
        return window;
    }

    @Override
    public boolean resident(int token) {
        return window.contains(token) || (cache != null && cache.slotOf(token) >= 0);
    }

    @Override
    public boolean residentShard(int token, int shard) {
        return window.contains(token) || (shardCaches != null && shardCaches.of(shard).slotOf(token) >= 0);
    }

    /** Adds the sinks' and the window's rows; returns the row count. */
    protected int addResidentRows(EntryFetch f) {
        int rows = 0;
        for (int t = 0; t < window.sinkEnd(); t++) {
            rows = f.addRow(t, rows);
        }
        for (int t = window.start(); t < window.end(); t++) {
            rows = f.addRow(t, rows);
        }
        return rows;
    }

    /** Sizes the view, submits the planned reads and copies what DRAM holds. */
    protected void launch(EntryFetch f, ViewBuffer view, int rows, long t0) {
        view.begin(layer, rows, store.store().dram());
        f.submit(view, layer, layout, this, t0);
        f.copyResident(window, cache, shardCaches);
        store.store().backend().poll(); // the copies took a while: refill the queue before the caller computes
    }

    @Override
    public void startPositions(EntryFetch f, ViewBuffer view, int[] positions, int count) {
        long t0 = System.nanoTime();
        f.beginRows(window.end());
        f.external = true;
        int rows = 0;
        int clustered = layout == null ? 0 : layout.clusteredTokens();
        f.reserveReads(count);
        for (int i = 0; i < count; i++) {
            int t = positions[i];
            rows = f.addRow(t, rows);
            if (t < clustered) {
                f.addRead(t); // residents are dropped by the scheduler (Eq. 8)
            }
        }
        launch(f, view, rows, t0);
    }

    @Override
    public void appended(MemorySegment keys, MemorySegment values, int before, int n) {
        long half = sequence.shape().halfEntryBytes();
        for (int i = 0; i < n; i++) {
            window.append(keys, i * half, values, i * half);
        }
    }

    @Override
    public void addGauges(DecodeCounters.Gauges g) {
        g.windowBytes += window.memoryBytes();
        if (cache != null) {
            g.cacheHits += cache.policy().hits();
            g.cacheMisses += cache.policy().misses();
            g.cacheBytes += (long) cache.usedSlots() * sequence.shape().entryBytes();
        }
        if (shardCaches != null) {
            shardCaches.addGauges(g, shardBytes());
        }
    }

    @Override
    public void close() {
        window.close();
        if (cache != null) {
            cache.close();
        }
        if (shardCaches != null) {
            shardCaches.close();
        }
    }
}
