package io.kvoffload.internal.swarm;

import io.kvoffload.DecodeOptions;
import io.kvoffload.KvShape;
import io.kvoffload.internal.decode.DecodeCounters;
import io.kvoffload.internal.decode.DramWindow;
import io.kvoffload.internal.decode.EntryFetch;
import io.kvoffload.internal.decode.EntryLayer;
import io.kvoffload.internal.sequence.SequenceHooks;
import io.kvoffload.internal.decode.ViewBuffer;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.ClusterLayoutWriter;
import io.kvoffload.internal.util.ElementCodec;
import io.kvoffload.spi.IoBackend;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * Swarm's online phase for one layer of a decoder (Swarm §6–7): the query is scored against the
 * layer's medoid index, clusters are taken in score order until the token budget is filled (sinks
 * and window included), their entries go through the entry pipeline, hot clusters stay in a DRAM
 * cache (Eq. 6 or LRU), and tokens leaving the window join clusters (Eq. 9). A layer without a
 * cluster layout is attended in full from its DRAM window.
 */
public final class SwarmLayer extends EntryLayer {
    /** Cost-effectiveness constants (Eq. 6): a 4 KiB random read's fixed cost vs its transfer, in ns. */

    private final KvShape shape;
    private MedoidIndex index;
    private int[] clusterSize;
    private float[] scores;
    private ClusterSelection selection;
    /** Eq. 9 for tokens that leave the window; null when maintenance is off or the sequence is read-only. */
    private OnlineClusterMaintenance maintenance;
    /** Oldest token admitted to maintenance and not yet evicted. */
    private int nextEvict;
    /** Most clusters one step reports to maintenance (its ring's width). */
    private int maxActivated;
    /** The cluster whose medoid each token is, or -1 (Min-Diff compares keys with medoids). */
    private int[] clusterOfMedoid;

    // The step in flight (one per layer).
    private int[] activated = new int[256];
    private int activatedSize;
    /** Score of the last cluster selected: window tokens scoring at least this count as activated (Eq. 9). */
    private float lastScore;
    private final float[] aggregated;
    private final float[] key;
    private int[] activatedWindow = new int[256];
    /** Lets the I/O queue refill between scoring chunks (fetches in flight keep reading meanwhile). */
    private final Runnable refill;

    /**
     * @param lru the hot-cluster cache evicts the least recently activated cluster (else Eq. 6)
     * @param maintenance Eq. 9's policy for tokens leaving the window, or null to keep them in DRAM
     */
    public SwarmLayer(SequenceHooks store, DecodeOptions options, int layer, DecodeCounters counters, boolean lru,
            MaintenancePolicy maintenance) {
        super(store, options, layer, counters);
        this.shape = sequence.shape();
        this.aggregated = new float[shape.kvHeads() * shape.headDim()];
        this.key = new float[shape.kvHeads() * shape.headDim()];
        IoBackend io = store.store().backend();
        this.refill = io::poll;
        if (layout == null) {
            return;
        }
        try {
            int tokens = sequence.tokenCount(layer);
            index = SwarmLayouts.of(store).medoidIndex(layer);
            attachLayout(layout);
            openCache(lru);
            // A head-sharded layout does not grow online: appended tokens stay with the layer's tail.
            if (maintenance != null && sequence.isWritable() && options.localWindow() > 0 && layout.shards() == 1) {
                openMaintenance(maintenance, layout.clusteredTokens(), tokens);
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** Eq. 9 state for the layer; tokens past the clustered prefix enter its window in order. */
    private void openMaintenance(MaintenancePolicy policy, int clustered, int tokens) {
        ClusterLayout cl = layout;
        int[] medoids = cl.medoids();
        long[] sizes = new long[medoids.length];
        for (int c = 0; c < sizes.length; c++) {
            sizes[c] = cl.size(c);
        }
        // The best-scoring clusters of a step feed Eq. 9; a cap keeps its ring (window × this) small.
        maxActivated = (int) Math.min(4096, Math.max(64, (long) Math.ceil(options.sparsity() * tokens) / 4));
        clusterOfMedoid = new int[Math.max(16, tokens + options.localWindow())];
        Arrays.fill(clusterOfMedoid, -1);
        for (int c = 0; c < medoids.length; c++) {
            clusterOfMedoid[medoids[c]] = c;
        }
        float[] a = new float[shape.kvHeads() * shape.headDim()];
        float[] b = new float[a.length];
        maintenance = new OnlineClusterMaintenance(policy, medoids, sizes, cl.tau(), options.localWindow(),
                maxActivated, 4, (token, medoid) -> keyDistance(token, medoid, a, b));
        nextEvict = clustered;
        for (int t = clustered; t < tokens; t++) {
            admit(t);
        }
    }

    /** Min-Diff's key difference: L2 over all KV heads between a window token and a medoid. */
    private double keyDistance(int token, int medoidToken, float[] a, float[] b) {
        tokenKey(token, a);
        int c = medoidToken < clusterOfMedoid.length ? clusterOfMedoid[medoidToken] : -1;
        if (c >= 0) {
            index.medoidKey(c, b);
        } else if (window.contains(medoidToken)) {
            tokenKey(medoidToken, b);
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
    private void tokenKey(int token, float[] out) {
        ElementCodec.read(shape.dtype(), window.keySegment(token), window.keyOffset(token), out, 0, out.length);
    }

    /** A token enters maintenance's window; the oldest leaves first when it is full. */
    private void admit(int token) {
        OnlineClusterMaintenance m = maintenance;
        if (m.windowTokens() == m.window()) {
            m.evict(nextEvict++);
        }
        m.admit(token);
    }

    private void attachLayout(ClusterLayout l) {
        layout = l;
        int c = l.clusterCount();
        clusterSize = new int[c];
        for (int i = 0; i < c; i++) {
            clusterSize[i] = l.size(i);
        }
        scores = new float[c];
        selection = new ClusterSelection(c);
    }

    // ------------------------------------------------------------------ one step

    /**
     * Chooses the step's tokens: sinks, window, then clusters by medoid score until the budget
     * ({@code ⌈sparsity × tokens⌉} distinct tokens), then submits and copies what DRAM holds.
     */
    @Override
    public void start(EntryFetch f, ViewBuffer view, float[] query) {
        long t0 = System.nanoTime();
        int tokens = window.end();
        f.beginRows(tokens);
        activatedSize = 0;
        lastScore = Float.POSITIVE_INFINITY;
        int rows = addResidentRows(f);
        long budget = (long) Math.ceil(options.sparsity() * tokens);
        if (layout != null && rows < budget) {
            rows = selectClusters(f, query, rows, budget);
        }
        launch(f, view, rows, t0);
    }

    private int selectClusters(EntryFetch f, float[] query, int rows, long budget) {
        index.score(query, aggregated, scores, refill);
        ClusterLayout cl = layout;
        int clusters = clusterSize.length;
        if (activated.length < clusters) {
            activated = new int[clusters];
        }
        selection.begin(scores, clusterSize, clusters, budget - rows);
        while (rows < budget) {
            int c = selection.next();
            if (c < 0) {
                break;
            }
            activated[activatedSize++] = c;
            lastScore = scores[c];
            int from = cl.firstEntry(c);
            int size = clusterSize[c];
            f.reserveReads(size);
            for (int e = from; e < from + size; e++) {
                int t = cl.entryToken(e);
                f.addRead(t);
                rows = f.addRow(t, rows);
            }
        }
        counters.unitsSelected += activatedSize;
        return rows;
    }

    @Override
    public void startPositions(EntryFetch f, ViewBuffer view, int[] positions, int count) {
        activatedSize = 0;
        super.startPositions(f, view, positions, count);
    }

    @Override
    public void finish(EntryFetch f, ViewBuffer view) {
        f.gather();
        if (cache != null && activatedSize > 0) {
            cache.step(activated, activatedSize, f);
        }
        if (maintenance != null && !f.external) {
            observe();
        }
    }

    /**
     * Feeds Eq. 9: the clusters selected this step, and the window tokens this step activated —
     * those whose score (the same GQA-aggregated logit the medoids got) reaches the last selected
     * cluster's, i.e. tokens that would have made the cut had they been medoids.
     */
    private void observe() {
        OnlineClusterMaintenance m = maintenance;
        int n = 0;
        if (activatedSize > 0) {
            float scale = (float) (1.0 / Math.sqrt(shape.headDim()));
            for (int t = nextEvict; t < window.end(); t++) {
                if (!m.inWindow(t)) {
                    continue;
                }
                tokenKey(t, key);
                float score = 0;
                for (int i = 0; i < key.length; i++) {
                    score += aggregated[i] * key[i];
                }
                if (score * scale >= lastScore) {
                    if (n == activatedWindow.length) {
                        activatedWindow = Arrays.copyOf(activatedWindow, n * 2);
                    }
                    activatedWindow[n++] = t;
                }
            }
        }
        m.observeStep(activated, Math.min(activatedSize, maxActivated), activatedWindow, n);
    }

    // ------------------------------------------------------------------ new tokens

    @Override
    public void appended(MemorySegment keys, MemorySegment values, int before, int n) {
        long half = shape.halfEntryBytes();
        for (int i = 0; i < n; i++) {
            window.append(keys, i * half, values, i * half);
            if (maintenance != null) {
                admit(before + i);
            }
        }
        if (maintenance != null && maintenance.pendingAssignments() >= sequence.blockTokens()) {
            maintain();
        }
    }

    /**
     * Writes the tokens that left the window to their clusters (Eq. 9: each on its cluster's next
     * SSD), extends the layout, the medoid index (new clusters' medoid keys come from the window) and
     * the cache's slot map, then slides the window. Runs every {@code blockTokens} evictions, off the
     * fetch path.
     */
    private void maintain() {
        OnlineClusterMaintenance.Assignments a = maintenance.drainAssignments();
        if (a.size() == 0) {
            return;
        }
        ClusterLayout grown = ClusterLayoutWriter.append(store.store(), sequence.id(), store.checksum(), layer,
                shape, layout, a.tokens(), a.clusterStart(), a.clusterIds(),
                (pos, k, v) -> sequence.read(layer, pos, k, v));
        int added = a.newMedoids().length;
        if (added > 0) {
            int row = shape.kvHeads() * shape.headDim();
            float[] keys = new float[added * row];
            float[] one = new float[row];
            for (int i = 0; i < added; i++) {
                tokenKey(a.newMedoids()[i], one);
                System.arraycopy(one, 0, keys, i * row, row);
            }
            index.appendClusters(a.newMedoids(), keys);
            for (int i = 0; i < added; i++) {
                int t = a.newMedoids()[i];
                if (t >= clusterOfMedoid.length) {
                    int[] grownMap = Arrays.copyOf(clusterOfMedoid, Math.max(t + 1, clusterOfMedoid.length * 2));
                    Arrays.fill(grownMap, clusterOfMedoid.length, grownMap.length, -1);
                    clusterOfMedoid = grownMap;
                }
                clusterOfMedoid[t] = a.firstNewCluster() + i;
            }
        }
        SwarmLayouts.of(store).extend(layer, grown, index);
        if (cache != null) {
            cache.relayout(grown);
        }
        attachLayout(grown);
        DramWindow w = window;
        w.slide(Math.max(w.start(), Math.min(grown.clusteredTokens(), w.end() - options.localWindow())));
    }
}
