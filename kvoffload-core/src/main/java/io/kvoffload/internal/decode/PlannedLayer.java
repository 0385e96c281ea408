package io.kvoffload.internal.decode;

import io.kvoffload.internal.sequence.SequenceHooks;

import io.kvoffload.DecodeOptions;
import io.kvoffload.KvShape;
import io.kvoffload.internal.sequence.SequenceLayerKv;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.strategy.StoredUnits;
import io.kvoffload.strategy.LayoutUnits;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.HeadShards;
import io.kvoffload.internal.storage.UnitLayout;
import java.lang.foreign.MemorySegment;

/**
 * A plug-in {@link SelectionStrategy}'s layer: its {@link LayerSelector} fills a {@link FetchPlan}
 * and the entry pipeline fetches the plan from the layer's layout (positional pages by default).
 * The sinks and the window are always attended, from DRAM.
 */
public final class PlannedLayer extends EntryLayer {
    private final LayerSelector selector;
    /** The layer's auxiliary unit layout (a strategy's second copy, read before its selection), or null. */
    private final UnitLayout units;
    /** The layout clusters (pages, or Swarm's clusters) a step's positions fell in, each once: the hot cache's activations. */
    private int[] activated = new int[0];
    /** Per entry of {@link #activated}: the KV heads every member's row holds. */
    private long[] heldHeads = new long[0];
    /** The activated clusters whose rows hold one head group: what that group's cache steps with. */
    private int[] groupActivated = new int[0];
    private final io.kvoffload.internal.util.StampSet seen = new io.kvoffload.internal.util.StampSet();
    /** Per page a step's plan touched ({@link #completePages}): the page, the KV heads wanted of it. */
    private int[] touched = new int[0];
    private long[] pageWant = new long[0];
    private int[] pageSlot = new int[0];
    /** Per position of the step's plan, its layout cluster or -1 ({@link #pagesOfPlan}). */
    private int[] planPage = new int[0];

    /** @param openingQuery the step's query that opens the layer, or null (copied for the strategy) */
    public PlannedLayer(SelectionStrategy strategy, SequenceHooks store, DecodeOptions options, int layer,
            DecodeCounters counters, float[] openingQuery) {
        super(store, options, layer, counters);
        try {
            int tokens = sequence.tokenCount(layer);
            int laidOut = layout == null ? 0 : layout.clusteredTokens();
            KvShape shape = sequence.shape();
            this.units = store.ledger().layer(layer).units();
            StoredUnits stored = units == null ? null : new StoredUnits(units.owner(), units.version(), units.params(),
                    units.unitCount(), units.unitBytes(), units.memoryBytes());
            LayerSelector s;
            // The layer's keys, read once into memory when they fit, for the strategy's index.
            try (SequenceLayerKv kv = new SequenceLayerKv(sequence, layer, tokens).keysInMemory(1L << 30)) {
                s = strategy.openLayer(new Context(shape, layer, tokens, laidOut, options, kv, stored,
                        layout == null ? null : new Units(layout), layout == null ? 1 : layout.shards(),
                        openingQuery == null ? null : openingQuery.clone()));
            }
            if (s == null) {
                throw new IllegalStateException("strategy " + strategy.name() + " returned no selector for layer "
                        + layer);
            }
            this.selector = s;
            // Every plug-in strategy gets the hot-cluster cache over its layout's units, as Swarm does;
            // where tokens are stored as head groups, one per group (a per-head step fills rows in part).
            if (layout != null) {
                openCache(false, true);
            }
        } catch (RuntimeException e) {
            super.close();
            throw e;
        }
    }

    /**
     * The layout's clusters as {@link LayoutUnits}. Its member table is built on the first question,
     * so a strategy that never asks (most of them) costs nothing.
     */
    private static final class Units implements LayoutUnits {
        private final ClusterLayout layout;
        private int[] offsets;
        private int[] members;

        Units(ClusterLayout layout) {
            this.layout = layout;
        }

        private int[] members() {
            if (members == null) {
                offsets = layout.memberOffsets();
                members = layout.allMembers();
            }
            return members;
        }

        @Override
        public int count() {
            return layout.clusterCount();
        }

        @Override
        public int size(int unit) {
            return layout.size(unit);
        }

        @Override
        public int member(int unit, int i) {
            int[] m = members();
            return m[offsets[unit] + java.util.Objects.checkIndex(i, size(unit))];
        }

        @Override
        public int coActivationUnits() {
            return layout.coActivationClusters();
        }
    }

    private record Context(KvShape shape, int layer, int tokens, int laidOutTokens, DecodeOptions options, LayerKv keys,
            StoredUnits units, LayoutUnits layoutUnits, int headGroups, float[] openingQuery) implements LayerContext {
        @Override
        public int sinkTokens() {
            return options.sinkTokens();
        }

        @Override
        public int localWindow() {
            return options.localWindow();
        }
    }

    /**
     * Sinks and window first (DRAM), then the positions the selector adds; the plan's budget is the
     * step's token budget less those rows ({@code budgetTokens} when set).
     */
    @Override
    public void start(EntryFetch f, ViewBuffer view, float[] query) {
        long t0 = System.nanoTime();
        int tokens = window.end();
        f.beginRows(tokens);
        int rows = addResidentRows(f);
        long budget = options.budgetTokens() != DecodeOptions.AUTO ? options.budgetTokens()
                : Math.max(0, (long) Math.ceil(options.sparsity() * tokens) - rows);
        FetchPlan plan = f.plan;
        f.planned = true;
        int shards = layout == null ? 1 : layout.shards();
        plan.heads(sequence.shape().kvHeads(), shards);
        plan.begin(layer, tokens, (int) Math.min(budget, tokens));
        if (units != null) {
            // Step 1 of a two-step strategy: its auxiliary units, read and verified before it selects.
            plan.units().begin(units.unitCount(), units.unitBytes());
            selector.planUnits(query, plan, plan.units());
            long u0 = System.nanoTime();
            f.readUnits(units, layer);
            t0 += System.nanoTime() - u0; // the read counts as I/O time, not selection time
        } else {
            plan.units().begin(0, 0);
        }
        selector.select(query, plan);
        int n = plan.size();
        counters.unitsSelected += n;
        int laidOut = layout == null ? 0 : layout.clusteredTokens();
        f.reserveReads(n);
        // Per-head wants matter only where a token's heads are stored apart.
        boolean perHead = plan.perHead() && shards > 1;
        if (perHead) {
            f.perHeadRows(rows);
        }
        for (int i = 0; i < n; i++) {
            int t = plan.position(i);
            int before = rows;
            rows = f.addRow(t, rows);
            if (perHead) {
                f.wantHeads(f.viewRows.row(t), plan.kvHeadMask(i), rows > before);
            }
            if (t < laidOut) {
                f.addRead(t); // residents are dropped by the scheduler (Eq. 8)
            }
        }
        // The cache cannot change while a fetch is in flight (KvDecoder.setCacheBytes), so finish
        // activates over the pages mapped here.
        if (cache != null || shardCaches != null) {
            pagesOfPlan(plan, laidOut);
            completePages(f, plan, perHead, shards);
        }
        launch(f, view, rows, t0);
    }

    /**
     * Asks for the rest of every page the plan chose in part, where the page is one aligned read on
     * one device per head group (the read brings it whole anyway): then the hot cache can admit it
     * ({@link PageCompletion}). Under a per-head plan, the head groups any of its chosen tokens is
     * wanted for.
     */
    private void completePages(EntryFetch f, FetchPlan plan, boolean perHead, int shards) {
        ClusterLayout l = layout;
        int clusters = l.clusterCount(), n = 0;
        if (pageWant.length < clusters) {
            pageWant = new long[clusters];
            pageSlot = new int[clusters];
            touched = new int[clusters];
        }
        seen.clear(clusters);
        int c;
        for (int i = 0; i < plan.size(); i++) {
            if ((c = planPage[i]) < 0) {
                continue;
            }
            if (seen.add(c)) {
                pageSlot[c] = n;
                pageWant[n] = 0;
                touched[n++] = c;
            }
            pageWant[pageSlot[c]] |= perHead ? plan.kvHeadMask(i) : FetchPlan.ALL_HEADS;
        }
        int perGroup = sequence.shape().kvHeads() / shards;
        for (int k = 0; k < n; k++) {
            c = touched[k];
            if ((long) l.size(c) * l.storedEntryBytes() > f.alignment()
                    || l.clusterSegmentEnd(c) - l.clusterSegmentStart(c) != shards) {
                // More than one read: the rest would cost reads of its own. On 16q/4kv × 96 per head,
                // completing raised a step's bytes from 0.26–0.33 × the oracle's to 0.42–0.60 × at the
                // same recall (docs/benchmarks.md, "Parts of pages of more than one read").
                continue;
            }
            for (int e = l.firstEntry(c), end = e + l.size(c); e < end; e++) {
                int t = l.entryToken(e);
                for (int g = 0; g < shards; g++) {
                    if (pageWant[k] == FetchPlan.ALL_HEADS || (pageWant[k] & HeadShards.groupBits(g, perGroup)) != 0) {
                        f.complete(t, g, shards);
                    }
                }
            }
        }
    }

    @Override
    public void finish(EntryFetch f, ViewBuffer view) {
        f.gather();
        if (f.planned) {
            if (cache != null || shardCaches != null) {
                int n = activate(f.plan, f.viewRows, view, f);
                if (cache != null) {
                    cache.step(activated, n, f);
                }
                if (shardCaches != null) {
                    stepShardCaches(n, view, f);
                }
            }
            selector.afterStep(f.plan);
        }
    }

    /**
     * Steps each head group's cache with the activated clusters whose every member's row holds that
     * group (from {@link #heldHeads}, so the plan is walked once for all groups).
     */
    private void stepShardCaches(int n, ViewBuffer view, EntryFetch f) {
        if (groupActivated.length < n) {
            groupActivated = new int[activated.length];
        }
        int s = shardCaches.shards(), perGroup = view.keyHeads() / s;
        for (int g = 0; g < s; g++) {
            long bits = HeadShards.groupBits(g, perGroup);
            int m = 0;
            for (int i = 0; i < n; i++) {
                if ((heldHeads[i] & bits) == bits) {
                    groupActivated[m++] = activated[i];
                }
            }
            shardCaches.of(g).step(groupActivated, m, f.shardSource(g, s));
        }
    }

    /**
     * The layout clusters holding the plan's laid-out positions whose every member the step holds
     * ({@link #heldHeads}: a row of the view, an entry read to complete the page, or one the cache has),
     * each once, into {@link #activated}, and the KV heads all of them hold into {@link #heldHeads};
     * returns how many. The cache copies an admitted cluster's entries from the step, so a larger page a
     * token-set strategy read in part is not activated.
     */
    private int activate(FetchPlan plan, ViewRows rows, ViewBuffer view, EntryFetch f) {
        ClusterLayout l = layout;
        int clusters = l.clusterCount();
        if (activated.length < clusters) {
            activated = new int[clusters];
            heldHeads = new long[clusters];
        }
        seen.clear(clusters);
        int n = 0, c;
        for (int i = 0; i < plan.size(); i++) {
            if ((c = planPage[i]) >= 0 && seen.add(c)) {
                long held = heldHeads(l, c, rows, view, f);
                if (held != 0) {
                    heldHeads[n] = held;
                    activated[n++] = c;
                }
            }
        }
        return n;
    }

    /**
     * The layout cluster of each of the plan's positions into {@link #planPage} (-1 past the laid-out
     * tokens), for {@link #completePages} and {@link #activate}. A position's cluster is that of its
     * first copy (entries are cluster-major); blocks come in runs, so most positions reuse the last one's.
     */
    private void pagesOfPlan(FetchPlan plan, int laidOut) {
        ClusterLayout l = layout;
        int clusters = l.clusterCount(), size = plan.size();
        if (planPage.length < size) {
            planPage = new int[Math.max(size, planPage.length * 2)];
        }
        int c = -1, from = 0, to = 0;
        for (int i = 0; i < size; i++) {
            int t = plan.position(i);
            if (t >= laidOut) {
                planPage[i] = -1;
                continue;
            }
            int e = l.replica(t, 0);
            if (e < from || e >= to) {
                c = clusterOf(l, e, clusters);
                from = l.firstEntry(c);
                to = from + l.size(c);
            }
            planPage[i] = c;
        }
    }

    /**
     * The KV heads every member of cluster {@code c} holds this step (-1 where every row is whole), or 0
     * when a member holds none: in its view row, read to complete the page ({@link #completePages}), or
     * already in the hot cache.
     */
    private long heldHeads(ClusterLayout l, int c, ViewRows rows, ViewBuffer view, EntryFetch f) {
        long held = -1L;
        int shards = l.shards(), kvHeads = sequence.shape().kvHeads();
        for (int e = l.firstEntry(c), end = e + l.size(c); e < end && held != 0; e++) {
            int t = l.entryToken(e);
            long m = rows.contains(t) ? view.headMask(rows.row(t)) : 0;
            if (m != -1L) {
                m |= f.completedHeads(t, shards, kvHeads) | cachedHeads(e, shards, kvHeads);
            }
            held &= m;
        }
        return held;
    }

    /**
     * The KV heads of stored entry {@code e} (this copy: a token another cluster also holds may be
     * cached through that one only) the hot cache holds: every bit for a whole entry, else its head groups'.
     */
    private long cachedHeads(int e, int shards, int kvHeads) {
        if (cache != null) {
            return cache.holds(e) ? -1L : 0;
        }
        long heads = 0;
        for (int g = 0; shardCaches != null && g < shards; g++) {
            if (shardCaches.of(g).holds(e)) {
                heads |= HeadShards.groupBits(g, kvHeads / shards);
            }
        }
        return heads;
    }

    /** The cluster whose entries include {@code entry}: the last whose first entry is at or before it. */
    private static int clusterOf(ClusterLayout l, int entry, int clusters) {
        int lo = 0, hi = clusters - 1;
        while (lo < hi) {
            int mid = (lo + hi + 1) >>> 1;
            if (l.firstEntry(mid) <= entry) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        return lo;
    }

    @Override
    public void appended(MemorySegment keys, MemorySegment values, int before, int n) {
        super.appended(keys, values, before, n);
        selector.appended(before + n);
    }

    @Override
    public void close() {
        try {
            selector.close();
        } finally {
            super.close();
        }
    }
}
