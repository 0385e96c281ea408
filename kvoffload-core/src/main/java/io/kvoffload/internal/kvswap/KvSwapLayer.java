package io.kvoffload.internal.kvswap;

import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.KvChecksumException;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.internal.decode.DecodeCounters;
import io.kvoffload.internal.decode.DramWindow;
import io.kvoffload.internal.decode.EntryFetch;
import io.kvoffload.internal.decode.LayerFetcher;
import io.kvoffload.internal.sequence.SequenceHooks;
import io.kvoffload.internal.decode.StagedReads;
import io.kvoffload.internal.decode.ViewBuffer;
import io.kvoffload.internal.decode.ViewRows;
import io.kvoffload.internal.elastic.UnitSlots;
import io.kvoffload.internal.sched.BucketScheduler;
import io.kvoffload.internal.storage.EntryVerifier;
import io.kvoffload.internal.storage.GroupLayout;
import io.kvoffload.internal.storage.GroupLayoutWriter;
import io.kvoffload.internal.storage.Store;
import io.kvoffload.spi.IoBatch;
import io.kvoffload.internal.util.ElementCodec;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * KVSwap's online phase for one layer of a {@link io.kvoffload.KvDecoder} [KVSwap §3.3–3.4], on the same
 * scheduler and I/O path as Swarm's:
 * <ol>
 *   <li>the {@link GroupPredictor} scores the query against the layer's compressed K cache (in DRAM,
 *       {@code tokens × r}) and picks the top groups among those with tokens between the sinks and
 *       the window, {@code M = ⌈budget / G⌉} of them or, where a group straddles an edge, as many
 *       more as fill the budget (the sinks and window are in the view already, as for every strategy);</li>
 *   <li>tokens of a chosen group in DRAM (sinks, the window, which is also KVSwap's rolling buffer:
 *       tokens not yet in a stored group) need nothing; the others are looked up in the {@link ReuseBuffer}
 *       (one DRAM slot per group), whose hits need no I/O;</li>
 *   <li>the misses go through the {@link BucketScheduler} with the {@link GroupLayout} as its
 *       replica table (unit = one group, one copy), so groups adjacent on a device merge into one
 *       read, and one {@link IoBatch} submission feeds every SSD; a head-sharded layout's unit is a
 *       head group of a group, so each missed group is read from S devices at once, each serving
 *       its heads, and the gather puts every head group in its heads' place of the rows;</li>
 *   <li>on completion every group's checksum is checked before its tokens reach the view or its
 *       reuse slot.</li>
 * </ol>
 * New tokens appended through the decoder join the window; each time G of them past the
 * compressed cache's end are there, their keys are projected and appended to it, so later steps can
 * predict (and find in DRAM) the new group. Once {@link #rollTokens} tokens of full groups have left
 * the local window, they are written group-major to the SSDs ({@link GroupLayoutWriter#append}), the
 * sequence's layout grows ({@link KvSequence#extendGroups}) and the window slides past them: the
 * rolling buffer keeps only the newest tokens [KVSwap §3.4.1], and the new groups are fetched
 * like the others when predicted.
 *
 * <p>Everything a step needs is allocated when the layer opens or grown when a larger step is first
 * seen; {@link #start} and {@link #finish} allocate nothing in steady state. One thread at a time;
 * one fetch in flight (the decoder enforces both).
 */
public final class KvSwapLayer implements LayerFetcher {
    private final SequenceHooks layers;
    private final KvSequence sequence;
    private final Store store;
    private final DecodeCounters counters;
    private final KvShape shape;
    private final DecodeOptions options;
    private final int layer;
    private GroupLayout layout; // grows when the rolling buffer flushes groups (rollGroups)
    private final int g;
    private final int half;
    private final int stride;
    private final int groupBytes;
    /** Head groups each group is stored in ({@link GroupLayout#shards()}; 1: token-striped). */
    private final int shards;
    /** Bytes of one reuse slot: a whole group, token-striped ({@code [K of G | V of G]}) whatever the layout. */
    private final int slotBytes;
    private final boolean checksums;
    private final EntryVerifier verifier;

    private final DramWindow window;
    private final CompressedKCache cache;
    private final GroupPredictor predictor;
    private final float[] keyScratch;
    private ReuseBuffer reuse;
    private ReusePlan plan;
    /** The reuse buffer's memory: elastic units, one slot a group ({@code stride} bytes); null without a buffer. */
    private UnitSlots reuseUnits;
    private final boolean fifo;
    private final BucketScheduler scheduler;
    /** Flush full groups once this many tokens (a multiple of G) have left the local window; 0: never. */
    private final int rollTokens;

    // Per-step working state, grown rarely.
    private int[] selected;
    private int[] requested;
    private int[] missGroups;
    /** The misses' stored keys (each group's head groups when sharded), what the scheduler plans. */
    private int[] missKeys;
    private int[] missSlot; // reuse slot of group g's miss this step (valid where missStamp[g] == generation)
    private int[] missStamp;
    private final ViewRows viewRows = new ViewRows();
    private int generation; // marks this step's misses in missStamp
    private final StagedReads reads;
    private long startNanos;
    /** The view runs land into during {@link #finish}; one sink made once, so finishing allocates nothing. */
    private ViewBuffer landingView;
    private final StagedReads.RunSink sink = this::landed;

    /**
     * @param reuseGroups the reuse buffer's groups ({@code -1}: M; 0: none)
     * @param fifo FIFO replacement (else the artifact's replace-unrequested)
     * @param rollingFlush write full groups that left the window to the SSDs
     */
    public KvSwapLayer(SequenceHooks layers, DecodeOptions options, int layer, GroupLayout layout, DecodeCounters counters,
            int reuseGroups, boolean fifo, boolean rollingFlush) {
        this.layers = layers;
        this.sequence = layers.sequence();
        this.store = layers.store();
        this.counters = counters;
        this.shape = sequence.shape();
        this.options = options;
        this.layer = layer;
        this.layout = layout;
        this.fifo = fifo;
        this.g = layout.groupSize();
        this.half = shape.halfEntryBytes();
        this.stride = layout.stride();
        this.groupBytes = layout.groupBytes();
        this.shards = layout.shards();
        this.slotBytes = shards == 1 ? stride : groupBytes;
        this.verifier = new EntryVerifier(store, layers.checksum(), sequence.id());
        this.checksums = verifier.enabled();
        this.reads = new StagedReads(store, layers.alignment());
        int tokens = sequence.tokenCount(layer);
        int grouped = layout.groupedTokens();
        // The compressed K cache of the stored groups (rebuilt from the stored keys, see KvSequence.compressedKeys).
        this.cache = GroupLayouts.of(layers).compressedKeys(layer, DType.F16, tokens + 4096);
        this.predictor = new GroupPredictor(cache, shape.queryHeads(), g, tokens + 4096);
        this.keyScratch = new float[shape.elementsPerToken()];
        // Sinks, then the window: the newest localWindow tokens and every token past the last stored group.
        int sinkEnd = Math.min(options.sinkTokens(), tokens);
        int start = Math.max(sinkEnd, Math.min(grouped, tokens - options.localWindow()));
        this.window = new DramWindow(store.elastic(), store.dram(), half, sinkEnd, start,
                tokens - start + Math.max(options.localWindow(), g));
        try {
            window.load(sequence, layer, tokens);
            // Full groups past the stored ones (a committed rolling buffer) are predicted as soon as the layer opens.
            projectFullGroups();
            int m = groupsFor(tokens);
            int slots = reuseGroups < 0 ? m : reuseGroups == 0 ? 0 : Math.max(reuseGroups, m);
            if (slots > 0) {
                reuseUnits = new UnitSlots(store.elastic(), slotBytes);
                resizeReuse((int) ((slots + (long) reuseUnits.perUnit() - 1) / reuseUnits.perUnit()));
            }
        } catch (RuntimeException e) {
            window.close();
            if (reuseUnits != null) {
                reuseUnits.close();
            }
            throw e;
        }
        int groups = layout.groupCount();
        this.scheduler = new BucketScheduler(store.devices().size(), stride, Math.max(1, (256 << 10) / stride),
                BucketScheduler.Mode.BALANCED);
        this.scheduler.readAlignment(layers.alignment());
        int cap = Math.max(16, groupsFor(tokens));
        this.selected = new int[cap];
        this.requested = new int[cap];
        this.missGroups = new int[cap];
        this.missKeys = new int[cap * shards];
        this.missSlot = new int[groups];
        this.missStamp = new int[groups];
        // As Swarm's maintenance: batches of about a block, written off the fetch path; OFF keeps tokens in DRAM.
        this.rollTokens = !rollingFlush || !sequence.isWritable() ? 0
                : (Math.max(sequence.blockTokens(), g) + g - 1) / g * g;
    }

    @Override
    public DramWindow window() {
        return window;
    }

    /** M for a context of {@code tokens} before its sinks and window are counted (sizing): they are estimated from the options. */
    private int groupsFor(int tokens) {
        int sinks = Math.min(options.sinkTokens(), tokens);
        return groupsFor(tokens, sinks + Math.min(options.localWindow(), tokens - sinks));
    }

    /**
     * M for a context of {@code tokens} of which {@code resident} rows (sinks and window) are already in
     * the view: ⌈budget / G⌉ with the budget given, or {@code ⌈sparsity × tokens⌉} less the resident rows —
     * sinks and window count inside the shared budget, as for every strategy ({@link DecodeOptions#sparsity()}).
     * At least one group.
     */
    private int groupsFor(int tokens, int resident) {
        return (int) Math.max(1, (freshBudget(tokens, resident) + g - 1) / g);
    }

    /** Rows a step adds to its {@code resident} sinks and window: the budget given, or {@code ⌈sparsity × tokens⌉} less them. */
    private int freshBudget(int tokens, int resident) {
        long budget = options.budgetTokens() == DecodeOptions.AUTO
                ? Math.max(0, (long) Math.ceil(options.sparsity() * tokens) - resident)
                : options.budgetTokens();
        return (int) Math.min(budget, tokens);
    }

    // ------------------------------------------------------------------ one step

    /** Predicts, looks up the reuse buffer, submits the misses' reads and copies what DRAM holds into the view. */
    @Override
    public void start(EntryFetch slot, ViewBuffer view, float[] query) {
        long t0 = System.nanoTime();
        int tokens = window.end();
        viewRows.begin(tokens);
        if (++generation == Integer.MAX_VALUE) {
            Arrays.fill(missStamp, 0);
            generation = 1;
        }
        int gen = generation;
        int rows = 0;
        for (int t = 0; t < window.sinkEnd(); t++) {
            rows = viewRows.add(t, rows);
        }
        for (int t = window.start(); t < tokens; t++) {
            rows = viewRows.add(t, rows);
        }
        int fresh = freshBudget(tokens, rows);
        int want = groupsFor(tokens, rows) + 2; // the two groups the sinks' and window's edges cut may count less
        if (selected.length < want) {
            selected = new int[want];
            requested = new int[want];
            missGroups = new int[want];
            missKeys = new int[want * shards];
        }
        // Only groups with tokens between the sinks and the window are candidates, until those tokens fill
        // the budget: every strategy attends the same rows.
        int m = predictor.selectGroupsBetween(query, fresh, window.sinkEnd(), window.start(), selected);
        counters.unitsSelected += m;
        int stored = layout.groupCount();
        int req = 0;
        for (int i = 0; i < m; i++) {
            int grp = selected[i];
            int first = grp * g;
            int end = Math.min(first + g, tokens);
            boolean io = false;
            for (int t = first; t < end; t++) {
                if (!window.contains(t)) {
                    io = true;
                }
                rows = viewRows.add(t, rows);
            }
            // A group wholly in DRAM (window, sinks, or appended since the layout was written) needs no read.
            if (io && grp < stored) {
                requested[req++] = grp;
            }
        }
        view.begin(layer, rows, store.dram());

        int misses = 0;
        int inBuffer = 0;
        if (reuse != null) {
            inBuffer = Math.min(req, reuse.slots());
            reuse.request(0, requested, inBuffer, plan);
            for (int i = 0; i < inBuffer; i++) {
                if (!plan.hit(i)) {
                    int grp = requested[i];
                    missGroups[misses++] = grp;
                    missSlot[grp] = plan.slot(i);
                    missStamp[grp] = gen;
                }
            }
            counters.reuseHits += plan.hits();
        }
        for (int i = inBuffer; i < req; i++) { // beyond the buffer's slots (a budget grown with the context)
            int grp = requested[i];
            missGroups[misses++] = grp;
            missSlot[grp] = -1;
            missStamp[grp] = gen;
        }
        counters.reuseMisses += misses;
        schedule(misses);
        long t1 = System.nanoTime(); // I/O time runs from the submission, as KvDecoder's
        counters.selectNanos += t1 - t0;
        startNanos = t1;
        reads.submit();
        // While the SSDs work: rows DRAM holds (sinks, window, reuse hits).
        for (int r = 0; r < rows; r++) {
            int t = viewRows.token(r);
            if (window.contains(t)) {
                view.putRow(r, t, window.keySegment(t), window.keyOffset(t), window.valueSegment(t),
                        window.valueOffset(t));
                counters.tokensWindow++;
            }
        }
        if (reuse != null) {
            for (int i = 0; i < inBuffer; i++) {
                if (plan.hit(i)) {
                    int s = plan.slot(i);
                    counters.tokensCached += putGroup(view, requested[i], reuseUnits.segment(s), reuseUnits.offset(s));
                }
            }
        }
    }


    /** Plans the misses' reads (adjacent groups on a device merge) and fills the batch: one aligned read per run. */
    private void schedule(int misses) {
        reads.clear();
        if (misses == 0) {
            return;
        }
        if (shards == 1) {
            scheduler.plan(missGroups, misses, layout, null);
        } else {
            for (int i = 0; i < misses; i++) {
                for (int s = 0; s < shards; s++) {
                    missKeys[i * shards + s] = missGroups[i] * shards + s; // every device reads its heads of the group
                }
            }
            scheduler.plan(missKeys, misses * shards, layout, null);
        }
        reads.fill(scheduler);
    }

    /** Waits for the reads, verifies every group and gathers it into the view and its reuse slot as it lands. */
    @Override
    public void finish(EntryFetch slot, ViewBuffer view) {
        if (reads.runs() == 0) {
            return;
        }
        boolean ok = false;
        try {
            landingView = view;
            counters.ioNanos += reads.gatherAsLanded(sink) - startNanos;
            ok = true;
        } finally {
            landingView = null;
            if (!ok && reuse != null) {
                // The slot table already names this step's misses as loaded: forget them all, never serve stale bytes.
                reuse.clear(0);
            }
            reads.clear();
        }
    }

    /** Run {@code r} landed: verify its groups, copy them into the view and their reuse slots. */
    private void landed(int r) {
        BucketScheduler sched = scheduler;
        int[] planned = sched.plannedEntries();
        MemorySegment mem = reads.memory();
        int gen = generation;
        int dev = sched.runDevice(r);
        int first = sched.runFirst(r);
        int n = sched.runEntries(r);
        reads.countRead(r, counters);
        for (int k = 0; k < n; k++) {
            int key = planned[first + k];
            int grp = key / shards;
            long at = reads.at(r) + (long) k * stride;
            if (checksums) {
                verify(key, dev, at);
            }
            boolean toSlot = missStamp[grp] == gen && missSlot[grp] >= 0;
            if (shards == 1) {
                counters.tokensFetched += putGroup(landingView, grp, mem, at);
                if (toSlot) {
                    int s = missSlot[grp];
                    MemorySegment.copy(mem, at, reuseUnits.segment(s), reuseUnits.offset(s), groupBytes);
                }
            } else {
                int shard = key % shards;
                int n0 = putGroupShard(landingView, grp, shard, mem, at);
                if (shard == 0) {
                    counters.tokensFetched += n0; // a token counts once, not once per head group
                }
                if (toSlot) {
                    int s = missSlot[grp];
                    shardToSlot(shard, mem, at, reuseUnits.segment(s), reuseUnits.offset(s));
                }
            }
        }
    }

    /** Head group {@code shard} of the group's tokens that DRAM's window does not hold into their rows; returns how many. */
    private int putGroupShard(ViewBuffer view, int grp, int shard, MemorySegment src, long at) {
        int first = grp * g;
        long part = half / shards;
        int n = 0;
        for (int i = 0; i < g; i++) {
            int t = first + i;
            if (!window.contains(t)) {
                view.putShard(viewRows.row(t), t, shard, shards, src, at + i * part, src, at + (g + i) * part);
                n++;
            }
        }
        return n;
    }

    /** Head group {@code shard} of a group into its place in a token-striped reuse slot ({@code [K of G | V of G]}). */
    private void shardToSlot(int shard, MemorySegment src, long at, MemorySegment slot, long slotAt) {
        long part = half / shards;
        for (int i = 0; i < g; i++) {
            MemorySegment.copy(src, at + i * part, slot, slotAt + (long) i * half + shard * part, part);
            MemorySegment.copy(src, at + (g + i) * part, slot, slotAt + (long) (g + i) * half + shard * part, part);
        }
    }

    /** Copies the group's tokens that DRAM's window does not hold into their rows; returns how many. */
    private int putGroup(ViewBuffer view, int grp, MemorySegment src, long at) {
        int first = grp * g;
        int n = 0;
        for (int i = 0; i < g; i++) {
            int t = first + i;
            if (!window.contains(t)) {
                view.putRow(viewRows.row(t), t, src, at + (long) i * half, src, at + (long) (g + i) * half);
                n++;
            }
        }
        return n;
    }

    /** Checks stored key {@code key} (a group, or a head group of one) against its checksum. */
    private void verify(int key, int dev, long at) {
        int grp = key / shards;
        int actual = reads.checksum(verifier.checksum(), layout.checksumKind(), layer, layout.checksumPosition(key), at,
                layout.storedBytes());
        if (actual != layout.groupCrc(key)) {
            throw verifier.failure(dev, layer, grp * g, grp * g + g, layout.groupCrc(key), actual);
        }
        verifier.verified();
    }

    // ------------------------------------------------------------------ new tokens

    /**
     * After the window grew: every full group past the compressed cache's end joins it (its keys
     * projected), then full groups that left the local window may be flushed ({@link #rollGroups}).
     */
    @Override
    public void appended(MemorySegment keys, MemorySegment values, int before, int n) {
        for (int i = 0; i < n; i++) {
            window.append(keys, (long) i * half, values, (long) i * half);
        }
        projectFullGroups();
        rollGroups();
    }

    /** A group layout serves whole groups, not single positions. */
    @Override
    public void startPositions(EntryFetch slot, ViewBuffer view, int[] positions, int count) {
        throw new IllegalStateException("layer " + layer + " is laid out in groups for the KVSWAP selector;"
                + " fetching caller-chosen positions needs a clustered layer (or the SWARM selector)");
    }

    /** Projects every full group of the window past the compressed cache's end into it. */
    private void projectFullGroups() {
        int elements = shape.elementsPerToken();
        DType dtype = shape.dtype();
        while (window.end() - cache.tokens() >= g && window.contains(cache.tokens())) {
            for (int i = 0; i < g; i++) {
                int t = cache.tokens();
                ElementCodec.read(dtype, window.keySegment(t), window.keyOffset(t), keyScratch, 0, elements);
                cache.append(keyScratch, 0, 1);
            }
        }
    }

    /**
     * The rolling buffer's flush [KVSwap §3.4.1]: once at least {@link #rollTokens} tokens of
     * whole groups past the stored ones have left the local window, writes them group-major (group g
     * on SSD {@code g mod N}, continuing the round-robin; head-sharded, its head groups where
     * {@code HeadShards} puts them) from the window's DRAM copy, extends the sequence's layout and slides the window to the new end of the groups. Reuse slots keep their
     * group ids (old groups keep theirs; new ids were never cached), and the compressed K cache
     * already holds the new groups, so the predictor can pick them at once; they are fetched like any
     * other stored group. Runs between steps (the decoder refuses appends with this layer's fetch in
     * flight), so it may allocate.
     */
    private void rollGroups() {
        if (rollTokens == 0) {
            return;
        }
        int grouped = layout.groupedTokens();
        int target = Math.floorDiv(window.end() - options.localWindow(), g) * g;
        if (target - grouped < rollTokens) {
            return;
        }
        GroupLayout grown = GroupLayoutWriter.append(store, sequence.id(), layers.checksum(), layer, shape, layout,
                target, this::readRolling);
        GroupLayouts.of(layers).extend(layer, grown);
        layout = grown;
        int groups = grown.groupCount();
        if (missSlot.length < groups) { // indexed by group, not stored key
            int n = Math.max(groups, missSlot.length + (missSlot.length >> 1));
            missSlot = Arrays.copyOf(missSlot, n);
            missStamp = Arrays.copyOf(missStamp, n);
        }
        window.slide(Math.max(window.start(), Math.min(target, window.end())));
    }

    /** Source of the flushed tokens: the window's copy (they are still in it), else the sequence. */
    private void readRolling(int[] positions, MemorySegment k, MemorySegment v) {
        for (int p : positions) {
            if (!window.contains(p)) {
                sequence.read(layer, positions, k, v);
                return;
            }
        }
        for (int i = 0; i < positions.length; i++) {
            int t = positions[i];
            MemorySegment.copy(window.keySegment(t), window.keyOffset(t), k, (long) i * half, half);
            MemorySegment.copy(window.valueSegment(t), window.valueOffset(t), v, (long) i * half, half);
        }
    }

    /**
     * The reuse buffer's share of the decoder's elastic budget: {@code bytes} rounded down to whole
     * units. Growing takes units (new slots, empty); shrinking gives back the last units, SwiftCache's
     * contraction, and forgets the groups they held (read again on their next miss). Held groups in
     * the other slots stay where they are. A layer opened without a reuse buffer has none to resize.
     */
    @Override
    public long resizeCache(long bytes) {
        if (reuseUnits == null) {
            return 0;
        }
        resizeReuse((int) Math.min(Integer.MAX_VALUE / Math.max(1, reuseUnits.perUnit()) - 8,
                bytes / reuseUnits.unitBytes()));
        return reuseUnits.heldBytes();
    }

    @Override
    public long cacheHeldBytes() {
        return reuseUnits == null ? 0 : reuseUnits.heldBytes();
    }

    private void resizeReuse(int units) {
        int held = reuseUnits.heldUnits();
        if (units > held) {
            reuseUnits.grow(units - held);
        } else if (units < held) {
            int[] last = new int[held - units];
            for (int i = 0; i < last.length; i++) {
                last[i] = held - 1 - i; // reuse units are never holes: slots stay 0 .. units × perUnit - 1
            }
            reuseUnits.drop(last, last.length);
        }
        int slots = units * reuseUnits.perUnit();
        if (slots == 0) {
            reuse = null;
            plan = null;
        } else if (reuse == null) {
            reuse = new ReuseBuffer(1, slots, fifo ? ReuseBuffer.Policy.FIFO : ReuseBuffer.Policy.REPLACE_UNREQUESTED);
            plan = reuse.newPlan();
        } else if (reuse.slots() != slots) {
            reuse.resize(slots);
            plan = reuse.newPlan();
        }
    }

    // ------------------------------------------------------------------ stats and lifecycle

    /** DRAM this layer holds: its window, and beyond it the reuse slots and the compressed K cache. */
    @Override
    public void addGauges(DecodeCounters.Gauges g) {
        g.windowBytes += window.memoryBytes();
        g.reuseBytes += (reuseUnits == null ? 0 : reuseUnits.heldBytes()) + cache.reservedBytes();
    }

    @Override
    public void close() {
        window.close();
        reads.close();
        if (reuseUnits != null) {
            reuseUnits.close();
            reuseUnits = null;
        }
    }
}
