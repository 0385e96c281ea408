package io.kvoffload;

import io.kvoffload.internal.cache.CostEffectiveness;
import io.kvoffload.internal.decode.DramWindow;
import io.kvoffload.internal.decode.HotClusterCache;
import io.kvoffload.internal.decode.StagedReads;
import io.kvoffload.internal.decode.ViewRows;
import io.kvoffload.internal.sched.BucketScheduler;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.EntryChecksum;
import io.kvoffload.internal.storage.GroupLayout;
import io.kvoffload.internal.storage.ReplicaFailover;
import io.kvoffload.internal.storage.Store;
import io.kvoffload.internal.storage.ClusterLayoutWriter;
import io.kvoffload.internal.swarm.ClusterSelection;
import io.kvoffload.internal.swarm.MaintenancePolicy;
import io.kvoffload.internal.swarm.MedoidIndex;
import io.kvoffload.internal.swarm.OnlineClusterMaintenance;
import io.kvoffload.workload.ElementCodec;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.internal.util.SingleOwner;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.workload.LayerKv;
import java.lang.foreign.MemorySegment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Swarm's online phase for one sequence (papers/000 §6, §7): per decoding step and layer, the
 * engine hands a query to {@link #prefetch}, which scores it against the layer's medoid index,
 * takes clusters in score order until the token budget is filled, plans the reads with the bucket
 * scheduler (Eq. 8: each entry once, none that DRAM already holds, spread over the SSDs), submits
 * them in one batch and returns at once (reads the I/O ring has no room for wait in its backlog);
 * {@link KvView#await()} then checks every entry's checksum and gathers it into the view as its read
 * lands, while later reads are still in flight; sinks, window and cached entries are copied in
 * while the SSDs work.
 *
 * <pre>{@code
 * try (KvDecoder dec = sequence.decoder(DecodeOptions.defaults())) {
 *     KvView next = dec.prefetch(0, queryFor(0));
 *     for (int l = 0; l < layers; l++) {
 *         KvView view = next.await();
 *         if (l + 1 < layers) next = dec.prefetch(l + 1, queryFor(l + 1)); // overlaps layer l
 *         attend(view);
 *         view.close();
 *     }
 * }
 * }</pre>
 *
 * <p>Between steps, {@link #appendKv} adds the new token's K and V: it is written to the sequence
 * and kept in the DRAM window. Hot clusters stay in a DRAM cache (Eq. 6 or LRU).
 *
 * <p>One thread uses a decoder at a time. After the first step of each layer (which loads the
 * window and builds the medoid index), prefetch and await allocate nothing on the heap and take no
 * lock that other sequences' decoders take.
 */
public final class KvDecoder implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(KvDecoder.class);
    /** Cost-effectiveness constants (Eq. 6): a 4 KiB random read's fixed cost vs its transfer, in ns. */
    private static final CostEffectiveness SCORE = CostEffectiveness.swarm(80_000, 2_000);

    private final KvSequence sequence;
    private final Store store;
    private ReplicaFailover failover; // created on the first failed read
    private final KvShape shape;
    private final DecodeOptions options;
    private final int entry;
    private final int half;
    private final int alignment;
    private final boolean checksums;
    private final LayerState[] layers;
    private final KvView[] views;
    private final Fetch[] fetches;
    /** Every public entry takes it: one thread at a time (see {@link SingleOwner}). */
    private final SingleOwner owner = new SingleOwner();
    private boolean closed;
    /** Set by {@link #close} before it waits for the owner, so the owner's next call fails at once. */
    private volatile boolean closing;

    // Counters (one thread uses the decoder).
    private long steps;
    private long selectNanos;
    private long ioNanos;
    private long bytesRead;
    private long readRequests;
    private long tokensFetched;
    private long tokensCached;
    private long tokensWindow;
    private long clustersSelected;
    /** Reads by size: bucket b counts requests of [2^b, 2^(b+1)) bytes (benchmarks compare against fio at these sizes). */
    private final long[] readSizeCount = new long[40];
    private final long[] readSizeBytes = new long[40];

    KvDecoder(KvSequence sequence, Store store, DecodeOptions options, int alignment) {
        this.sequence = sequence;
        this.store = store;
        this.shape = sequence.shape();
        this.options = options;
        this.entry = shape.entryBytes();
        this.half = shape.halfEntryBytes();
        this.alignment = alignment;
        this.checksums = store.config().checksums();
        this.layers = new LayerState[shape.layers()];
        this.views = new KvView[options.pipelineDepth()];
        this.fetches = new Fetch[options.pipelineDepth()];
        for (int i = 0; i < views.length; i++) {
            views[i] = new KvView(this, i, shape, sequence.blockTokens());
            fetches[i] = new Fetch();
        }
    }

    public DecodeOptions options() {
        return options;
    }

    // ------------------------------------------------------------------ per-layer state

    /** What a layer keeps between steps: its layout, medoid index, DRAM window and hot-cluster cache. */
    private final class LayerState implements BucketScheduler.Residency {
        final int layer;
        ClusterLayout layout;
        MedoidIndex index;
        int[] clusterSize;
        float[] scores;
        ClusterSelection selection;
        DramWindow window;
        HotClusterCache cache;
        KvSwapLayer kvswap; // non-null: the layer is fetched by KVSwap (DecodeOptions.Selector.KVSWAP)
        LayerSelector selector; // non-null: a plug-in strategy (DecodeOptions.strategy) chooses the positions
        boolean inFlight;
        /** Eq. 9 for tokens that leave the window; null when maintenance is off or the sequence is read-only. */
        OnlineClusterMaintenance maintenance;
        /** Oldest token admitted to maintenance and not yet evicted. */
        int nextEvict;
        /** Most clusters one step reports to maintenance (its ring's width). */
        int maxActivated;
        /** The cluster whose medoid each token is, or -1 (Min-Diff compares keys with medoids). */
        int[] clusterOfMedoid;

        LayerState(int layer) {
            this.layer = layer;
        }

        @Override
        public boolean resident(int token) {
            return window.contains(token) || (cache != null && cache.slotOf(token) >= 0);
        }
    }

    private LayerState layer(int l) {
        LayerState s = layers[l];
        if (s == null) {
            s = open(l);
            layers[l] = s;
        }
        return s;
    }

    /** First use of a layer: medoid index, DRAM window (sinks + newest or unclustered tokens), cache. */
    private LayerState open(int l) {
        LayerState s = new LayerState(l);
        GroupLayout groups = options.selector() == DecodeOptions.Selector.KVSWAP ? sequence.groupLayout(l) : null;
        if (groups != null) {
            s.kvswap = new KvSwapLayer(sequence, store, options, l, groups, alignment);
            s.window = s.kvswap.window();
            return s;
        }
        int tokens = sequence.tokenCount(l);
        s.layout = sequence.clusterLayout(l);
        int clustered = s.layout == null ? 0 : s.layout.clusteredTokens();
        int sinkEnd = Math.min(options.sinkTokens(), tokens);
        int start = Math.max(sinkEnd, Math.min(clustered, tokens - options.localWindow()));
        if (tokens - start > Math.max(options.localWindow(), 1) * 4L && tokens - start > 4096) {
            LOG.warn("sequence {} layer {}: {} tokens are not clustered and stay in DRAM for attention; cluster the"
                    + " layer (KvSequence.clusterLayer) to fetch them selectively", sequence.id(), l, tokens - start);
        }
        s.window = new DramWindow(store.dram(), half, sinkEnd, start, tokens - start + options.localWindow());
        s.window.load(sequence, l, tokens);
        if (s.layout != null && options.strategy() != null) {
            s.selector = openSelector(options.strategy(), l, tokens, s.layout.clusteredTokens());
            attachLayout(s, s.layout);
        } else if (s.layout != null) {
            s.index = sequence.medoidIndex(l);
            attachLayout(s, s.layout);
            long total = options.cacheBytes() == DecodeOptions.AUTO ? store.config().dramBudgetBytes() / 8
                    : options.cacheBytes();
            long perLayer = total / shape.layers();
            if (perLayer >= entry) {
                s.cache = new HotClusterCache(store.dram(), s.layout, entry, perLayer,
                        options.cachePolicy() == DecodeOptions.CachePolicy.LRU, SCORE);
            }
            if (options.maintenance() != DecodeOptions.Maintenance.OFF && sequence.isWritable()
                    && options.localWindow() > 0) {
                openMaintenance(s, clustered, tokens);
            }
        }
        return s;
    }

    /** A plug-in strategy's selector for layer {@code l}, built from the layer's stored keys. */
    private LayerSelector openSelector(SelectionStrategy strategy, int l, int tokens, int laidOut) {
        try (SequenceLayerKv kv = new SequenceLayerKv(sequence, l, tokens).keysInMemory(1L << 30)) {
            LayerSelector selector = strategy.openLayer(new LayerContext() {
                @Override
                public KvShape shape() {
                    return shape;
                }

                @Override
                public int layer() {
                    return l;
                }

                @Override
                public int tokens() {
                    return tokens;
                }

                @Override
                public int laidOutTokens() {
                    return laidOut;
                }

                @Override
                public int sinkTokens() {
                    return options.sinkTokens();
                }

                @Override
                public int localWindow() {
                    return options.localWindow();
                }

                @Override
                public LayerKv keys() {
                    return kv;
                }
            });
            if (selector == null) {
                throw new IllegalStateException("strategy " + strategy.name() + " returned no selector for layer " + l);
            }
            return selector;
        }
    }

    /** Eq. 9 state for a layer; tokens past the clustered prefix enter its window in order. */
    private void openMaintenance(LayerState s, int clustered, int tokens) {
        ClusterLayout cl = s.layout;
        int[] medoids = cl.medoids();
        long[] sizes = new long[medoids.length];
        for (int c = 0; c < sizes.length; c++) {
            sizes[c] = cl.size(c);
        }
        MaintenancePolicy policy = switch (options.maintenance()) {
            case SWARM -> MaintenancePolicy.SWARM;
            case MIN_SIZE -> MaintenancePolicy.MIN_SIZE;
            case MIN_DIFF -> MaintenancePolicy.MIN_DIFF;
            case OFF -> throw new IllegalStateException("maintenance is off");
        };
        // The best-scoring clusters of a step feed Eq. 9; a cap keeps its ring (window × this) small.
        int maxActivated = (int) Math.min(4096, Math.max(64, (long) Math.ceil(options.sparsity() * tokens) / 4));
        s.maxActivated = maxActivated;
        s.clusterOfMedoid = new int[Math.max(16, tokens + options.localWindow())];
        java.util.Arrays.fill(s.clusterOfMedoid, -1);
        for (int c = 0; c < medoids.length; c++) {
            s.clusterOfMedoid[medoids[c]] = c;
        }
        float[] a = new float[shape.kvHeads() * shape.headDim()];
        float[] b = new float[a.length];
        s.maintenance = new OnlineClusterMaintenance(policy, medoids, sizes, cl.tau(), options.localWindow(),
                maxActivated, 4, (token, medoid) -> keyDistance(s, token, medoid, a, b));
        s.nextEvict = clustered;
        for (int t = clustered; t < tokens; t++) {
            admit(s, t);
        }
    }

    /** Min-Diff's key difference: L2 over all KV heads between a window token and a medoid. */
    private double keyDistance(LayerState s, int token, int medoidToken, float[] a, float[] b) {
        tokenKey(s.window, token, a);
        int c = medoidToken < s.clusterOfMedoid.length ? s.clusterOfMedoid[medoidToken] : -1;
        if (c >= 0) {
            MemorySegment keys = s.index.medoidKeys();
            MemorySegment.copy(keys, java.lang.foreign.ValueLayout.JAVA_FLOAT, (long) c * b.length * 4, b, 0, b.length);
        } else if (s.window.contains(medoidToken)) {
            tokenKey(s.window, medoidToken, b);
        } else {
            return Double.MAX_VALUE;
        }
        double d = 0;
        for (int i = 0; i < a.length; i++) {
            double x = a[i] - b[i];
            d += x * x;
        }
        return Math.sqrt(d);
    }

    /** A DRAM-resident token's key as floats, all KV heads. */
    private void tokenKey(DramWindow w, int token, float[] out) {
        ElementCodec.read(shape.dtype(), w.keySegment(token), w.keyOffset(token), out, 0, out.length);
    }

    /** A token enters maintenance's window; the oldest leaves first when it is full. */
    private void admit(LayerState s, int token) {
        OnlineClusterMaintenance m = s.maintenance;
        if (m.windowTokens() == m.window()) {
            m.evict(s.nextEvict++);
        }
        m.admit(token);
    }

    private void attachLayout(LayerState s, ClusterLayout layout) {
        s.layout = layout;
        int c = layout.clusterCount();
        s.clusterSize = new int[c];
        for (int i = 0; i < c; i++) {
            s.clusterSize[i] = layout.size(i);
        }
        s.scores = new float[c];
        s.selection = new ClusterSelection(c);
    }

    // ------------------------------------------------------------------ one fetch

    /** Working state of one pipeline slot: everything a step needs, allocated once and grown rarely. */
    private final class Fetch implements HotClusterCache.TokenSource, StagedReads.RunSink {
        final BucketScheduler scheduler = new BucketScheduler(store.devices().size(), entry,
                Math.max(1, (256 << 10) / entry), mode(options.scheduling()));
        final StagedReads reads = new StagedReads(store, alignment);
        int[] concat = new int[1024];
        int concatSize;
        int[] activated = new int[256];
        int[] ranked = new int[256];
        int activatedSize;
        /** Positions came from the caller (no clusters activated). */
        boolean external;
        /** Score of the last cluster selected: window tokens scoring at least this count as activated (Eq. 9). */
        float lastScore;
        final float[] aggregated = new float[shape.kvHeads() * shape.headDim()];
        final float[] key = new float[shape.kvHeads() * shape.headDim()];
        int[] activatedWindow = new int[256];
        final ViewRows viewRows = new ViewRows();
        /** The positions a plug-in strategy chose this step. */
        final FetchPlan plan = new FetchPlan();
        /** The step's positions came from {@link #plan} (its selector hears {@code afterStep}). */
        boolean planned;
        long startNanos;
        KvView view;
        LayerState layer;

        @Override
        public void copyEntry(int token, MemorySegment dst, long offset) {
            view.copyEntryTo(viewRows.row(token), dst, offset);
        }

        @Override
        public void landed(int run) {
            gatherRun(this, run);
        }

        @Override
        public void failed(int run, KvIoException e) {
            if (!checksums) {
                throw e;
            }
            // The read failed: serve each of its entries from another copy (which repairs this one).
            BucketScheduler sched = scheduler;
            int dev = sched.runDevice(run);
            for (int k = 0; k < sched.runEntries(run); k++) {
                int token = sched.plannedEntries()[sched.runFirst(run) + k];
                long at = reads.at(run) + (long) k * entry;
                failover().recover(layer.layout, layer.layer, token, dev, sched.runOffset(run) + (long) k * entry,
                        "read failed: " + e.getMessage(), reads.memory(), at);
                view.putEntry(viewRows.row(token), token, reads.memory(), at);
            }
            tokensFetched += sched.runEntries(run);
        }
    }

    private static BucketScheduler.Mode mode(DecodeOptions.Scheduling s) {
        return switch (s) {
            case SWARM -> BucketScheduler.Mode.SWARM;
            case STATIC -> BucketScheduler.Mode.STATIC;
            case NO_BALANCE -> BucketScheduler.Mode.NO_BALANCE;
            case NO_DEDUP -> BucketScheduler.Mode.NO_DEDUP;
        };
    }

    /**
     * Starts fetching what {@code query} needs from {@code layer} and returns at once; the view is
     * usable after {@link KvView#await()}. At most {@link DecodeOptions#pipelineDepth()} views may be
     * fetching or held at a time, and one fetch per layer.
     *
     * @param query {@code queryHeads × headDim} floats, head after head (the query heads of one KV
     *     head are aggregated for scoring, GQA)
     */
    public KvView prefetch(int layer, float[] query) {
        boolean owned = owner.enter(this);
        try {
            checkOpen();
            Checks.index("layer", layer, shape.layers());
            Checks.notNull("query", query);
            if (query.length != shape.queryHeads() * shape.headDim()) {
                throw new IllegalArgumentException("query.length = " + query.length + " must be queryHeads × headDim = "
                        + shape.queryHeads() + " × " + shape.headDim() + " = " + shape.queryHeads() * shape.headDim());
            }
            for (int i = 0; i < query.length; i++) {
                if (!Float.isFinite(query[i])) {
                    throw new IllegalArgumentException("query[" + i + "] = " + query[i] + "; allowed: finite values");
                }
            }
            LayerState ls = layer(layer);
            KvView view = freeView(ls, layer);
            Fetch f = fetches[view.slot];
            if (ls.kvswap != null) {
                f.view = view;
                f.layer = ls;
                ls.kvswap.start(view, query);
                view.state = KvView.State.FETCHING;
                ls.inFlight = true;
                return view;
            }
            long t0 = System.nanoTime();
            if (ls.selector != null) {
                f.external = true;
                return launch(ls, f, view, selectPlanned(ls, f, query), t0);
            }
            f.external = false;
            return launch(ls, f, view, select(ls, f, query), t0);
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    /**
     * Starts fetching exactly {@code positions[0..count)} of {@code layer} (repeats count once), for
     * an engine that selects tokens itself: the same scheduling, batched submission, checksums and
     * gathering as {@link #prefetch(int, float[])}, with sinks and window served from DRAM but not
     * added. The hot-cluster cache is consulted but not updated, and online maintenance sees no step.
     *
     * @param positions token positions in {@code [0, tokenCount(layer))}
     */
    public KvView prefetch(int layer, int[] positions, int count) {
        boolean owned = owner.enter(this);
        try {
            checkOpen();
            Checks.index("layer", layer, shape.layers());
            Checks.notNull("positions", positions);
            Checks.inRange("count", count, 0, positions.length);
            LayerState ls = layer(layer);
            if (ls.kvswap != null) {
                throw new IllegalStateException("layer " + layer + " is laid out in groups for the KVSWAP selector;"
                        + " fetching caller-chosen positions needs a clustered layer (or the SWARM selector)");
            }
            int tokens = ls.window.end();
            for (int i = 0; i < count; i++) {
                if (positions[i] < 0 || positions[i] >= tokens) {
                    throw new IllegalArgumentException("positions[" + i + "] = " + positions[i] + " is out of range;"
                            + " allowed: 0.." + (tokens - 1) + " (layer " + layer + " holds " + tokens + " tokens)");
                }
            }
            KvView view = freeView(ls, layer);
            Fetch f = fetches[view.slot];
            long t0 = System.nanoTime();
            beginRows(ls, f);
            int rows = 0;
            int clustered = ls.layout == null ? 0 : ls.layout.clusteredTokens();
            if (f.concat.length < count) {
                f.concat = new int[Math.max(count, f.concat.length * 2)];
            }
            for (int i = 0; i < count; i++) {
                int t = positions[i];
                rows = f.viewRows.add(t, rows);
                if (t < clustered) {
                    f.concat[f.concatSize++] = t; // residents are dropped by the scheduler (Eq. 8)
                }
            }
            f.external = true;
            return launch(ls, f, view, rows, t0);
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    private KvView freeView(LayerState ls, int layer) {
        if (ls.inFlight) {
            throw new IllegalStateException("layer " + layer + " already has a fetch in flight; await it first");
        }
        for (KvView v : views) {
            if (v.state == KvView.State.FREE) {
                return v;
            }
        }
        throw new IllegalStateException("all " + views.length + " views are fetching or held; close one before"
                + " prefetching more (DecodeOptions.pipelineDepth = " + views.length + ")");
    }

    /** Plans and submits the reads of the chosen rows, then copies what DRAM holds while the SSDs work. */
    private KvView launch(LayerState ls, Fetch f, KvView view, int rows, long t0) {
        view.ensureCapacity(rows, store.dram());
        view.layer = ls.layer;
        view.tokenCount = rows;
        f.view = view;
        f.layer = ls;
        schedule(ls, f);
        // I/O time runs from the submission: a backend may start (or even finish) reads inside submit.
        long t1 = System.nanoTime();
        selectNanos += t1 - t0;
        f.startNanos = t1;
        f.reads.submit();
        copyResident(ls, f, view);
        view.state = KvView.State.FETCHING;
        ls.inFlight = true;
        return view;
    }

    /**
     * Chooses the step's tokens: sinks, window, then clusters by medoid score until the budget.
     * Fills f.viewRows (one row per distinct token), f.concat (the chosen clusters' tokens,
     * repeats kept, for the scheduler) and f.activated. Returns the row count.
     */
    private int select(LayerState ls, Fetch f, float[] query) {
        int tokens = ls.window.end();
        beginRows(ls, f);
        int rows = 0;
        DramWindow w = ls.window;
        for (int t = 0; t < w.sinkEnd(); t++) {
            rows = f.viewRows.add(t, rows);
        }
        for (int t = w.start(); t < w.end(); t++) {
            rows = f.viewRows.add(t, rows);
        }
        long budget = (long) Math.ceil(options.sparsity() * tokens);
        if (ls.layout == null || rows >= budget) {
            return rows;
        }
        ls.index.score(query, f.aggregated, ls.scores);
        ClusterLayout cl = ls.layout;
        int clusters = ls.clusterSize.length;
        if (f.activated.length < clusters) {
            f.activated = new int[clusters];
            f.ranked = new int[clusters];
        }
        // Ranked clusters by score until the budget of distinct tokens is filled: ask for what is
        // missing, and for more when replicas and the window make clusters add fewer new tokens.
        long want = budget - rows;
        int ranked = 0;
        int used = 0;
        while (rows < budget) {
            if (used == ranked) {
                if (ranked == clusters) {
                    break;
                }
                ranked = ls.selection.select(ls.scores, ls.clusterSize, clusters, (int) Math.min(Integer.MAX_VALUE,
                        want), f.ranked);
                want = want * 2 + 16;
                if (used == ranked) {
                    break;
                }
            }
            int c = f.ranked[used++];
            f.activated[f.activatedSize++] = c;
            f.lastScore = ls.scores[c];
            int from = cl.firstEntry(c);
            int size = ls.clusterSize[c];
            if (f.concatSize + size > f.concat.length) {
                f.concat = java.util.Arrays.copyOf(f.concat, Math.max(f.concatSize + size, f.concat.length * 2));
            }
            for (int e = from; e < from + size; e++) {
                int t = cl.entryToken(e);
                f.concat[f.concatSize++] = t;
                rows = f.viewRows.add(t, rows);
            }
        }
        clustersSelected += f.activatedSize;
        return rows;
    }

    /**
     * A plug-in strategy's step: sinks and window first (DRAM), then the positions its selector adds
     * to the plan; fills f.viewRows and f.concat (positions in the layout, for the scheduler, which
     * drops those DRAM holds). Returns the row count.
     */
    private int selectPlanned(LayerState ls, Fetch f, float[] query) {
        int tokens = ls.window.end();
        beginRows(ls, f);
        int rows = 0;
        DramWindow w = ls.window;
        for (int t = 0; t < w.sinkEnd(); t++) {
            rows = f.viewRows.add(t, rows);
        }
        for (int t = w.start(); t < w.end(); t++) {
            rows = f.viewRows.add(t, rows);
        }
        long budget = options.budgetTokens() != DecodeOptions.AUTO ? options.budgetTokens()
                : Math.max(0, (long) Math.ceil(options.sparsity() * tokens) - rows);
        FetchPlan plan = f.plan;
        f.planned = true;
        plan.begin(ls.layer, tokens, (int) Math.min(budget, tokens));
        ls.selector.select(query, plan);
        int n = plan.size();
        int clustered = ls.layout.clusteredTokens();
        if (f.concat.length < n) {
            f.concat = new int[Math.max(n, f.concat.length * 2)];
        }
        for (int i = 0; i < n; i++) {
            int t = plan.position(i);
            rows = f.viewRows.add(t, rows);
            if (t < clustered) {
                f.concat[f.concatSize++] = t; // residents are dropped by the scheduler (Eq. 8)
            }
        }
        return rows;
    }

    /** Resets the step's rows, chosen clusters and activation threshold. */
    private static void beginRows(LayerState ls, Fetch f) {
        f.viewRows.begin(ls.window.end());
        f.concatSize = 0;
        f.planned = false;
        f.activatedSize = 0;
        f.lastScore = Float.POSITIVE_INFINITY;
    }

    /** Plans the reads (Eq. 8, buckets, runs) and fills the batch: one aligned read per run into staging. */
    private void schedule(LayerState ls, Fetch f) {
        f.reads.clear();
        if (f.concatSize == 0) {
            return;
        }
        f.scheduler.plan(f.concat, f.concatSize, ls.layout, ls);
        f.reads.fill(f.scheduler);
    }

    /** Copies the rows DRAM holds (sinks, window, cached clusters) into the view. */
    private void copyResident(LayerState ls, Fetch f, KvView view) {
        DramWindow w = ls.window;
        HotClusterCache cache = ls.cache;
        int rows = view.tokenCount;
        for (int r = 0; r < rows; r++) {
            int t = f.viewRows.token(r);
            if (w.contains(t)) {
                view.putRow(r, t, w.keySegment(t), w.keyOffset(t), w.valueSegment(t), w.valueOffset(t));
                tokensWindow++;
            } else if (cache != null) {
                int slot = cache.slotOf(t);
                if (slot >= 0) {
                    view.putEntry(r, t, cache.region(), cache.slotOffset(slot));
                    tokensCached++;
                }
            }
        }
    }

    /** Called by {@link KvView#await()}: waits for the reads, verifies and gathers them, updates the cache. */
    void complete(KvView view) {
        boolean owned = owner.enter(this);
        try {
            Fetch f = fetches[view.slot];
            LayerState ls = f.layer;
            boolean ok = false;
            try {
                if (ls.kvswap != null) {
                    ls.kvswap.finish(view);
                } else if (f.reads.runs() > 0) {
                    // Each run is verified and gathered as it lands, overlapping the fetch's later reads.
                    ioNanos += f.reads.gatherAsLanded(f) - f.startNanos;
                }
                if (ls.cache != null && f.activatedSize > 0) {
                    ls.cache.step(f.activated, f.activatedSize, f);
                }
                if (ls.maintenance != null && !f.external) {
                    observe(ls, f);
                }
                if (f.planned) {
                    ls.selector.afterStep(f.plan);
                }
                steps++;
                ok = true;
            } finally {
                f.reads.clear();
                ls.inFlight = false;
                view.state = ok ? KvView.State.READY : KvView.State.FREE;
                if (!ok) {
                    view.invalidate();
                }
            }
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    /** Run {@code r} of fetch {@code f} landed: verify each entry and put it in the fetch's view. */
    private void gatherRun(Fetch f, int r) {
        LayerState ls = f.layer;
        KvView view = f.view;
        BucketScheduler sched = f.scheduler;
        StagedReads reads = f.reads;
        MemorySegment mem = reads.memory();
        int[] planned = sched.plannedEntries();
        int dev = sched.runDevice(r);
        int first = sched.runFirst(r);
        int n = sched.runEntries(r);
        long len = reads.length(r);
        bytesRead += len;
        readRequests++;
        int bucket = 63 - Long.numberOfLeadingZeros(len);
        readSizeCount[bucket]++;
        readSizeBytes[bucket] += len;
        for (int k = 0; k < n; k++) {
            int token = planned[first + k];
            long at = reads.at(r) + (long) k * entry;
            if (checksums) {
                verify(f, ls.layout, ls.layer, token, dev, sched.runOffset(r) + (long) k * entry, at);
            }
            view.putEntry(f.viewRows.row(token), token, mem, at);
        }
        tokensFetched += n;
    }

    private void verify(Fetch f, ClusterLayout cl, int layer, int token, int dev, long fileOffset, long at) {
        int e = cl.entryAt(token, dev, fileOffset);
        // Seeded with the token wanted, so an entry from elsewhere fails even when its bytes are intact.
        int actual = f.reads.checksum(sequence.entryChecksum(), EntryChecksum.Kind.ENTRY, layer, token, at, entry);
        if (actual != cl.entryCrc(e)) {
            store.stats().checksumFailures.increment();
            // Another copy, if the token has one, serves the fetch and repairs this one; else this throws.
            failover().recover(cl, layer, token, dev, fileOffset, "checksum mismatch", f.reads.memory(), at);
            return;
        }
        store.stats().checksumsVerified.increment();
    }

    private ReplicaFailover failover() {
        if (failover == null) {
            failover = new ReplicaFailover(store, sequence.entryChecksum(), sequence.id(), entry);
        }
        return failover;
    }

    /**
     * Feeds Eq. 9: the clusters selected this step, and the window tokens this step activated —
     * those whose score (the same GQA-aggregated logit the medoids got) reaches the last selected
     * cluster's, i.e. tokens that would have made the cut had they been medoids.
     */
    private void observe(LayerState ls, Fetch f) {
        OnlineClusterMaintenance m = ls.maintenance;
        int n = 0;
        if (f.activatedSize > 0) {
            float scale = (float) (1.0 / Math.sqrt(shape.headDim()));
            for (int t = ls.nextEvict; t < ls.window.end(); t++) {
                if (!m.inWindow(t)) {
                    continue;
                }
                tokenKey(ls.window, t, f.key);
                float score = 0;
                for (int i = 0; i < f.key.length; i++) {
                    score += f.aggregated[i] * f.key[i];
                }
                if (score * scale >= f.lastScore) {
                    if (n == f.activatedWindow.length) {
                        f.activatedWindow = java.util.Arrays.copyOf(f.activatedWindow, n * 2);
                    }
                    f.activatedWindow[n++] = t;
                }
            }
        }
        m.observeStep(f.activated, Math.min(f.activatedSize, ls.maxActivated), f.activatedWindow, n);
    }

    /** Called by {@link KvView#close()}. */
    void release(KvView view) {
        boolean owned = owner.enter(this);
        try {
            if (view.state == KvView.State.FETCHING) {
                try {
                    complete(view);
                } catch (RuntimeException e) {
                    LOG.debug("fetch of layer {} failed while its view was closed", view.layer, e);
                }
            }
            view.state = KvView.State.FREE;
            view.invalidate();
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    // ------------------------------------------------------------------ new tokens

    /**
     * Appends K and V of new tokens of {@code layer} (see {@link KvSequence#appendKv}): written to
     * the sequence and kept in the layer's DRAM window, so the next step attends to them.
     */
    public void appendKv(int layer, MemorySegment keys, MemorySegment values) {
        boolean owned = owner.enter(this);
        try {
            checkOpen();
            Checks.index("layer", layer, shape.layers());
            LayerState ls = layers[layer];
            if (ls != null && ls.inFlight) {
                throw new IllegalStateException("layer " + layer + " has a fetch in flight; await it before appending");
            }
            int before = sequence.tokenCount(layer);
            sequence.appendKv(layer, keys, values);
            if (ls != null) {
                int n = sequence.tokenCount(layer) - before;
                for (int i = 0; i < n; i++) {
                    ls.window.append(keys, (long) i * half, values, (long) i * half);
                    if (ls.maintenance != null) {
                        admit(ls, before + i);
                    }
                }
                if (ls.maintenance != null && ls.maintenance.pendingAssignments() >= sequence.blockTokens()) {
                    maintain(ls);
                }
                if (ls.kvswap != null) {
                    ls.kvswap.appended();
                }
                if (ls.selector != null) {
                    ls.selector.appended(sequence.tokenCount(layer));
                }
            }
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    /**
     * Writes the tokens that left the window to their clusters (Eq. 9: each on its cluster's next
     * SSD), extends the layout, the medoid index (new clusters' medoid keys come from the window) and
     * the cache's slot map, then slides the window. Runs every {@code blockTokens} evictions, off the
     * fetch path.
     */
    private void maintain(LayerState ls) {
        OnlineClusterMaintenance.Assignments a = ls.maintenance.drainAssignments();
        if (a.size() == 0) {
            return;
        }
        int layer = ls.layer;
        ClusterLayout grown = ClusterLayoutWriter.append(store, sequence.id(), sequence.entryChecksum(), layer, shape,
                ls.layout, a.tokens(), a.clusterStart(), a.clusterIds(),
                (pos, k, v) -> sequence.read(layer, pos, k, v));
        int added = a.newMedoids().length;
        if (added > 0) {
            int row = shape.kvHeads() * shape.headDim();
            float[] keys = new float[added * row];
            float[] one = new float[row];
            for (int i = 0; i < added; i++) {
                tokenKey(ls.window, a.newMedoids()[i], one);
                System.arraycopy(one, 0, keys, i * row, row);
            }
            ls.index.appendClusters(a.newMedoids(), keys);
            for (int i = 0; i < added; i++) {
                int t = a.newMedoids()[i];
                if (t >= ls.clusterOfMedoid.length) {
                    int[] grownMap = java.util.Arrays.copyOf(ls.clusterOfMedoid, Math.max(t + 1,
                            ls.clusterOfMedoid.length * 2));
                    java.util.Arrays.fill(grownMap, ls.clusterOfMedoid.length, grownMap.length, -1);
                    ls.clusterOfMedoid = grownMap;
                }
                ls.clusterOfMedoid[t] = a.firstNewCluster() + i;
            }
        }
        sequence.extendClusters(layer, grown);
        sequence.installMedoidIndex(layer, ls.index, grown);
        if (ls.cache != null) {
            ls.cache.relayout(grown);
        }
        attachLayout(ls, grown);
        ls.window.slide(Math.max(ls.window.start(), Math.min(grown.clusteredTokens(), ls.window.end()
                - options.localWindow())));
    }

    /** {@link #appendKv(int, MemorySegment, MemorySegment)} for F32 sequences. */
    public void appendKv(int layer, float[] keys, float[] values) {
        Checks.notNull("keys", keys);
        Checks.notNull("values", values);
        if (shape.dtype() != DType.F32) {
            throw new IllegalArgumentException("keys is float[] but the sequence's dtype is " + shape.dtype()
                    + "; allowed for float[]: F32 (or pass a MemorySegment)");
        }
        appendKv(layer, MemorySegment.ofArray(keys), MemorySegment.ofArray(values));
    }

    // ------------------------------------------------------------------ stats and lifecycle

    /** Whether any view is fetching. */
    boolean hasFetchInFlight() {
        for (KvView v : views) {
            if (v.state == KvView.State.FETCHING) {
                return true;
            }
        }
        return false;
    }

    /** Counters since the decoder opened. */
    public DecodeStats stats() {
        boolean owned = owner.enter(this);
        try {
            long hits = 0;
            long misses = 0;
            long cacheUsed = 0;
            long window = 0;
            KvSwapCounters kv = new KvSwapCounters();
            for (LayerState s : layers) {
                if (s == null) {
                    continue;
                }
                kv.add(s.kvswap);
                window += s.window.memoryBytes();
                if (s.cache != null) {
                    hits += s.cache.policy().hits();
                    misses += s.cache.policy().misses();
                    cacheUsed += (long) s.cache.usedSlots() * entry;
                }
            }
            return new DecodeStats(steps, selectNanos + kv.selectNanos, ioNanos + kv.ioNanos, bytesRead + kv.bytesRead,
                    readRequests + kv.readRequests, tokensFetched + kv.tokensFetched, tokensCached + kv.tokensReused,
                    tokensWindow + kv.tokensWindow, clustersSelected + kv.groupsSelected, hits, misses, cacheUsed, window,
                    readSizeCount.clone(), readSizeBytes.clone(), kv.reuseHits, kv.reuseMisses, kv.memoryBytes);
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    private void checkOpen() {
        if (closing || closed) {
            throw new IllegalStateException(closedMessage());
        }
    }

    /** Whether {@link #close} has begun (from any thread). */
    boolean isClosing() {
        return closing;
    }

    String closedMessage() {
        return "decoder of sequence " + sequence.id() + " is closed" + (sequence.engineClosed()
                ? " because the engine was closed" : "");
    }

    @Override
    public String toString() {
        return "KvDecoder{sequence " + sequence.id() + "}";
    }

    /** Waits for fetches in flight, then frees the views, windows and caches. */
    @Override
    public void close() {
        closing = true;
        owner.markClosing(closedMessage());
        boolean owned = owner.enterWaiting();
        try {
            if (closed) {
                return;
            }
            for (KvView v : views) {
                release(v);
                v.free(store.dram());
            }
            closed = true;
            for (Fetch f : fetches) {
                f.reads.close();
            }
            for (LayerState s : layers) {
                if (s != null) {
                    s.window.close();
                    if (s.kvswap != null) {
                        s.kvswap.close();
                    }
                    if (s.selector != null) {
                        s.selector.close();
                    }
                    if (s.cache != null) {
                        s.cache.close();
                    }
                }
            }
            sequence.decoderClosed(this);
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }
}
