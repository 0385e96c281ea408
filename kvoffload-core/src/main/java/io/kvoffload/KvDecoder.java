package io.kvoffload;

import io.kvoffload.internal.decode.CacheBudgets;
import io.kvoffload.internal.decode.DecodeCounters;
import io.kvoffload.internal.decode.EntryFetch;
import io.kvoffload.internal.decode.FetchObserver;
import io.kvoffload.internal.decode.LayerFetcher;
import io.kvoffload.internal.decode.PipelineStrategy;
import io.kvoffload.internal.decode.PlannedLayer;
import io.kvoffload.internal.decode.SharedPlan;
import io.kvoffload.internal.sequence.DTypeArrays;
import io.kvoffload.internal.sequence.FloatKv;
import io.kvoffload.internal.sequence.SequenceAccess;
import io.kvoffload.internal.sequence.SequenceHooks;
import io.kvoffload.internal.sched.BucketScheduler;
import io.kvoffload.internal.storage.Store;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.internal.util.SingleOwner;
import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.Strategies;
import java.lang.foreign.MemorySegment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The online phase for one sequence: per decoding step and layer, the engine hands a query to
 * {@link #prefetch}, the layer's strategy chooses what the attention reads, and the fetch pipeline
 * serves it — DRAM residency (sinks, window, hot cache or reuse buffer), the bucket scheduler
 * (each entry once, none that DRAM holds, spread over the SSDs), one batched submission — and
 * returns at once (reads the I/O ring has no room for wait in its backlog);
 * {@link KvView#await()} then checks every entry's checksum and gathers it into the view as its read
 * lands, while later reads are still in flight; what DRAM holds is copied in while the SSDs work.
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
 * <p>The strategy is {@link DecodeOptions#strategy()}: the default one, another built-in or
 * a plug-in {@link SelectionStrategy}; a layer the chosen strategy did not lay out falls back to
 * {@link Strategies#defaultStrategy()}. Between steps, {@link #appendKv} adds new tokens' K and V: written
 * to the sequence and kept in the layer's DRAM window.
 *
 * <p>One thread uses a decoder at a time. After the first step of each layer (which loads its window
 * and builds the strategy's index), prefetch and await allocate nothing on the heap and take no lock
 * that other sequences' decoders take.
 */
public final class KvDecoder implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(KvDecoder.class);

    private final KvSequence sequence;
    private final Store store;
    private final SequenceHooks layerStore;
    private final KvShape shape;
    private final DecodeOptions options;
    private final SelectionStrategy strategy;
    private final LayerFetcher[] layers;
    private final boolean[] inFlight;
    private final KvView[] views;
    /** One pipeline slot per view: the scheduler, staging and rows of the fetch that view receives. */
    private final EntryFetch[] slots;
    private final DecodeCounters counters = new DecodeCounters();
    private final DTypeArrays arrays;
    /** Latency histograms and JFR fetch events. */
    private final FetchObserver observer;
    /** Every public entry takes it: one thread at a time (see {@link SingleOwner}). */
    private final SingleOwner owner = new SingleOwner();
    private boolean closed;
    /** Set by {@link #close} before it waits for the owner, so the owner's next call fails at once. */
    private volatile boolean closing;
    /** Per-layer elastic cache budget set by {@link #setCacheBytes}; -1 while the options' sizing applies. */
    private long cacheBytesPerLayer = -1;

    KvDecoder(KvSequence sequence, Store store, DecodeOptions options, int alignment) {
        this.sequence = sequence;
        this.store = store;
        this.layerStore = SequenceAccess.of(sequence);
        this.shape = sequence.shape();
        this.options = options;
        this.strategy = options.strategy();
        this.layers = new LayerFetcher[shape.layers()];
        this.inFlight = new boolean[shape.layers()];
        this.views = new KvView[options.pipelineDepth()];
        this.slots = new EntryFetch[options.pipelineDepth()];
        this.arrays = new DTypeArrays(shape.dtype());
        this.observer = new FetchObserver(counters, sequence.id(), options.pipelineDepth());
        BucketScheduler.Mode mode = BucketScheduler.Mode.of(options.scheduling());
        for (int i = 0; i < views.length; i++) {
            views[i] = new KvView(this, i, shape, sequence.blockTokens());
            slots[i] = new EntryFetch(store, layerStore.checksum(), sequence.id(), shape.entryBytes(), alignment, mode,
                    counters);
        }
    }

    public DecodeOptions options() {
        return options;
    }

    /**
     * Layer {@code l}'s fetcher, opened on first use: the strategy's own, or the default strategy's for a
     * layer it did not lay out; {@code query}, the opening step's (or null), is offered to the strategy
     * ({@link io.kvoffload.strategy.LayerContext#openingQuery()}).
     */
    private LayerFetcher layer(int l, float[] query) {
        LayerFetcher f = layers[l];
        if (f == null) {
            f = open(strategy, l, query);
            if (f == null) {
                f = open(Strategies.defaultStrategy(), l, query);
            }
            if (cacheBytesPerLayer >= 0) {
                try {
                    f.resizeCache(cacheBytesPerLayer);
                } catch (RuntimeException e) {
                    f.close();
                    throw e;
                }
            }
            layers[l] = f;
        }
        return f;
    }

    private LayerFetcher open(SelectionStrategy s, int l, float[] query) {
        return s instanceof PipelineStrategy p ? p.openFetcher(layerStore, options, l, counters)
                : new PlannedLayer(s, layerStore, options, l, counters, query);
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
            LayerFetcher f = layer(layer, query);
            KvView view = freeView(layer);
            long t0 = observer.starting();
            f.start(slots[view.slot], view.rows, query);
            observer.started(view.slot, t0);
            return started(view, layer);
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
     * added. A hot cache is consulted but not updated, and online maintenance sees no step.
     *
     * @param positions token positions in {@code [0, tokenCount(layer))}
     * @throws IllegalStateException if the layer's layout serves groups, not single positions
     */
    public KvView prefetch(int layer, int[] positions, int count) {
        boolean owned = owner.enter(this);
        try {
            checkOpen();
            Checks.index("layer", layer, shape.layers());
            Checks.notNull("positions", positions);
            Checks.inRange("count", count, 0, positions.length);
            LayerFetcher f = layer(layer, null);
            int tokens = f.window().end();
            for (int i = 0; i < count; i++) {
                if (positions[i] < 0 || positions[i] >= tokens) {
                    throw new IllegalArgumentException("positions[" + i + "] = " + positions[i] + " is out of range;"
                            + " allowed: 0.." + (tokens - 1) + " (layer " + layer + " holds " + tokens + " tokens)");
                }
            }
            KvView view = freeView(layer);
            long t0 = observer.starting();
            f.startPositions(slots[view.slot], view.rows, positions, count);
            observer.started(view.slot, t0);
            return started(view, layer);
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    /**
     * For {@link KvBatch}: starts {@code layer}'s fetch for {@code query} (validated by the batch)
     * as a member of {@code shared}: planned against the batch's device load so far, its reads sent
     * at once, its resident rows copied when its view is awaited.
     */
    KvView prefetchShared(int layer, float[] query, SharedPlan shared) {
        boolean owned = owner.enter(this);
        try {
            checkOpen();
            LayerFetcher f = layer(layer, query);
            KvView view = freeView(layer);
            EntryFetch slot = slots[view.slot];
            shared.join(slot);
            try {
                f.start(slot, view.rows, query);
            } catch (RuntimeException e) {
                slot.reads.leaveShared();
                throw e;
            }
            return started(view, layer);
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    /** Whether {@code other} stores on the same engine (one submission reaches one engine's SSDs). */
    boolean sameEngine(KvDecoder other) {
        return store == other.store;
    }

    /** A shared plan for batches of this engine's decoders. */
    SharedPlan newSharedPlan() {
        return new SharedPlan(store);
    }

    int layerCount() {
        return shape.layers();
    }

    int queryLength() {
        return shape.queryHeads() * shape.headDim();
    }

    private KvView freeView(int layer) {
        if (inFlight[layer]) {
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

    private KvView started(KvView view, int layer) {
        view.state = KvView.State.FETCHING;
        inFlight[layer] = true;
        return view;
    }

    /** Called by {@link KvView#await()}: the layer's fetcher waits for the reads, verifies and gathers them. */
    void complete(KvView view) {
        boolean owned = owner.enter(this);
        try {
            EntryFetch slot = slots[view.slot];
            int layer = view.rows.layer();
            boolean ok = false;
            observer.finishing();
            try {
                layers[layer].finish(slot, view.rows);
                counters.steps++;
                ok = true;
            } finally {
                observer.finished(view.slot, layer, view.rows.rows(), ok);
                slot.clear();
                inFlight[layer] = false;
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

    /** Called by {@link KvView#close()}. */
    void release(KvView view) {
        boolean owned = owner.enter(this);
        try {
            if (view.state == KvView.State.FETCHING) {
                try {
                    complete(view);
                } catch (RuntimeException e) {
                    LOG.debug("fetch of layer {} failed while its view was closed", view.rows.layer(), e);
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

    /**
     * Appends K and V of new tokens of {@code layer} (see {@link KvSequence#appendKv}): written to
     * the sequence and kept in the layer's DRAM window, so the next step attends to them.
     */
    public void appendKv(int layer, MemorySegment keys, MemorySegment values) {
        boolean owned = owner.enter(this);
        try {
            checkOpen();
            Checks.index("layer", layer, shape.layers());
            if (inFlight[layer]) {
                throw new IllegalStateException("layer " + layer + " has a fetch in flight; await it before appending");
            }
            int before = sequence.tokenCount(layer);
            sequence.appendKv(layer, keys, values);
            LayerFetcher f = layers[layer];
            if (f != null) {
                f.appended(keys, values, before, sequence.tokenCount(layer) - before);
            }
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    /**
     * {@link #appendKv(int, MemorySegment, MemorySegment)} from floats, for a sequence of any dtype
     * (F16 and BF16 converted, see {@link KvSequence#appendKv(int, float[], float[])}).
     */
    public void appendKv(int layer, float[] keys, float[] values) {
        FloatKv.append(shape, keys, values, (k, v) -> appendKv(layer, k, v));
    }

    /** {@link #appendKv(int, MemorySegment, MemorySegment)} for F16 and BF16 sequences (raw bit patterns). */
    public void appendKv(int layer, short[] keys, short[] values) {
        appendKv(layer, arrays.f16("keys", keys), DTypeArrays.of("values", values));
    }

    /** Whether any view is fetching. */
    boolean hasFetchInFlight() {
        for (KvView v : views) {
            if (v.state == KvView.State.FETCHING) {
                return true;
            }
        }
        return false;
    }

    /**
     * Changes the DRAM this decoder's elastic caches (its layers' hot caches or reuse buffers, units
     * of the engine's elastic pool) may hold, between steps: {@code bytes} shared equally by the
     * layers, as {@link DecodeOptions#cacheBytes()} is, each share rounded down to whole units.
     * Growing takes units; shrinking evicts what the cache least wants to keep and gives units back,
     * and the pool frees each chunk that empties. No cached entry is copied and no view is touched
     * (a view holds its own copy). Layers opened later start at this budget. See docs/configuration.md.
     *
     * @param bytes 0 or more
     * @return bytes the open layers hold afterwards
     * @throws IllegalStateException while a fetch is in flight (await its view first), or when another
     *     thread is using the decoder
     * @throws KvDramExhaustedException when growing finds no room; the budget then stays as it was
     */
    public long setCacheBytes(long bytes) {
        return owner.call(this, () -> {
            checkOpen();
            Checks.inRange("bytes", bytes, 0, Long.MAX_VALUE);
            for (int l = 0; l < inFlight.length; l++) {
                if (inFlight[l]) {
                    throw new IllegalStateException("layer " + l + " has a fetch in flight; await its view before"
                            + " resizing the decoder's caches");
                }
            }
            long held = CacheBudgets.resize(layers, bytes / shape.layers());
            cacheBytesPerLayer = bytes / shape.layers();
            return held;
        });
    }

    /** Bytes of elastic units the decoder's open layers hold now (see {@link #setCacheBytes}). */
    public long cacheBytes() {
        return owner.call(this, () -> CacheBudgets.held(layers));
    }

    /** Counters since the decoder opened. */
    public DecodeStats stats() {
        return owner.call(this, () -> {
            DecodeCounters.Gauges g = new DecodeCounters.Gauges();
            for (LayerFetcher f : layers) {
                if (f != null) {
                    f.addGauges(g);
                }
            }
            DecodeCounters c = counters;
            return new DecodeStats(c.steps, c.selectNanos, c.ioNanos, c.bytesRead, c.readRequests, c.tokensFetched,
                    c.tokensCached, c.tokensWindow, c.unitsSelected, g.cacheHits, g.cacheMisses, g.cacheBytes,
                    g.windowBytes, c.readSizeCount, c.readSizeBytes, c.reuseHits, c.reuseMisses, g.reuseBytes,
                    c.waitNanos, new LatencyHistogram(c.fetchLatency.copy()),
                    new LatencyHistogram(c.selectLatency.copy()), new LatencyHistogram(c.ioLatency.copy()),
                    c.unclusteredLayers);
        });
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
        return "KvDecoder{sequence " + sequence.id() + ", " + strategy.name() + "}";
    }

    /** Waits for fetches in flight, then frees the views, windows, caches and strategies' state. */
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
            for (EntryFetch f : slots) {
                f.close();
            }
            for (LayerFetcher f : layers) {
                if (f != null) {
                    f.close();
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
